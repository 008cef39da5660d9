"""C++ ReLU: OpenMP over the elements, vectorised by the compiler."""

import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

SOURCE = r"""
#include <torch/extension.h>
torch::Tensor relu(torch::Tensor x) {
    TORCH_CHECK(x.is_contiguous() && x.scalar_type() == torch::kFloat, "contiguous float32");
    auto y = torch::empty_like(x);
    const float* __restrict__ src = x.data_ptr<float>();
    float* __restrict__ dst = y.data_ptr<float>();
    const int64_t n = x.numel();
    #pragma omp parallel for simd schedule(static)
    for (int64_t i = 0; i < n; ++i) dst[i] = src[i] > 0.0f ? src[i] : 0.0f;
    return y;
}
"""

_ext = load_inline(
    name="kernelevolve_adversarial_relu",
    cpp_sources=SOURCE,
    functions=["relu"],
    extra_cflags=["-O3", "-march=native", "-fopenmp"],
    extra_ldflags=["-fopenmp"],
)


class ModelNew(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return _ext.relu(x.contiguous())
