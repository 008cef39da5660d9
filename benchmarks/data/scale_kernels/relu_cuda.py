"""CUDA ReLU as a C++/CUDA extension (load_inline) for tests/fixtures/kb_relu.py: benchmarks/scale_device.py's
candidate whose build is noticeable (nvcc with torch's headers, about a minute). VARIANT is part of the CUDA source,
so each variant the benchmark makes is a build of its own (docs/benchmarks/scale.md, "One GPU (device)")."""

import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

VARIANT = 0
THREADS = 256

CUDA_SOURCE = r"""
#include <torch/extension.h>

__global__ void relu_kernel(const float* __restrict__ x, float* __restrict__ y, int64_t n) {
    const int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) { const float v = x[i]; y[i] = v < 0.f ? 0.f : v; }
}

torch::Tensor relu(torch::Tensor x, int64_t threads) {
    TORCH_CHECK(x.is_cuda() && x.scalar_type() == torch::kFloat, "a float32 CUDA tensor");
    auto xc = x.contiguous();
    auto y = torch::empty_like(xc);
    const int64_t n = xc.numel();
    if (n) {
        const unsigned blocks = (unsigned)((n + threads - 1) / threads);
        relu_kernel<<<blocks, (unsigned)threads>>>(  // the default stream (the harness sets no other)
            xc.data_ptr<float>(), y.data_ptr<float>(), n);
    }
    return y;
}
"""

_ext = load_inline(
    name=f"kernelevolve_scale_relu_{VARIANT}",
    cpp_sources="torch::Tensor relu(torch::Tensor x, int64_t threads);",
    cuda_sources=f"// variant {VARIANT}\n" + CUDA_SOURCE,
    functions=["relu"],
    extra_cuda_cflags=["-O3"],
)


class ModelNew(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return _ext.relu(x, THREADS)
