"""C++ CPU candidate for examples/rmsnorm: fused residual add + RMSNorm * weight.

OpenMP over rows; per row one SIMD pass accumulates sum((x + residual)^2) in fp32 lanes and a
second pass recomputes z = x + residual and writes z * inv_rms * weight (the row stays in
cache between the passes). Built with torch.utils.cpp_extension.load_inline at import.
"""

import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

# Rows each OpenMP thread takes at a time (schedule(static, ROWS_PER_CHUNK)): what `kernelevolve optimize` tunes.
ROWS_PER_CHUNK = 16
TUNABLES = {"ROWS_PER_CHUNK": [1, 2, 4, 8, 16, 32, 64]}

EPS = 1e-6

_CPP_SOURCE = r"""
#include <torch/extension.h>

#include <cmath>
#include <cstdint>

static void check_input(const torch::Tensor& t, const char* name) {
    TORCH_CHECK(t.device().is_cpu(), "add_rmsnorm: ", name, " must be a CPU tensor");
    TORCH_CHECK(t.scalar_type() == torch::kFloat32, "add_rmsnorm: ", name, " must be float32");
    TORCH_CHECK(t.is_contiguous(), "add_rmsnorm: ", name, " must be contiguous");
}

torch::Tensor add_rmsnorm(torch::Tensor x, torch::Tensor residual, torch::Tensor weight, double eps) {
    check_input(x, "x");
    check_input(residual, "residual");
    check_input(weight, "weight");
    TORCH_CHECK(x.dim() == 2, "add_rmsnorm: x must be 2-D");
    TORCH_CHECK(residual.sizes() == x.sizes(), "add_rmsnorm: residual must have x's shape");
    TORCH_CHECK(weight.dim() == 1 && weight.size(0) == x.size(1),
                "add_rmsnorm: weight must have shape (x.size(1),)");

    auto y = torch::empty_like(x);
    const int64_t rows = x.size(0);
    const int64_t cols = x.size(1);
    if (rows == 0 || cols == 0) return y;
    const float* __restrict__ xp = x.data_ptr<float>();
    const float* __restrict__ rp = residual.data_ptr<float>();
    const float* __restrict__ wp = weight.data_ptr<float>();
    float* __restrict__ yp = y.data_ptr<float>();
    const double inv_cols = 1.0 / static_cast<double>(cols);

#pragma omp parallel for schedule(static, ROWS_PER_CHUNK)
    for (int64_t r = 0; r < rows; ++r) {
        const float* __restrict__ xr = xp + r * cols;
        const float* __restrict__ rr = rp + r * cols;
        float* __restrict__ yr = yp + r * cols;

        float ss = 0.0f;
#pragma omp simd reduction(+ : ss)
        for (int64_t c = 0; c < cols; ++c) {
            const float z = xr[c] + rr[c];
            ss += z * z;
        }
        const float inv_rms =
            static_cast<float>(1.0 / std::sqrt(static_cast<double>(ss) * inv_cols + eps));

#pragma omp simd
        for (int64_t c = 0; c < cols; ++c) yr[c] = (xr[c] + rr[c]) * inv_rms * wp[c];
    }
    return y;
}
"""

_ext = load_inline(
    name="kernelevolve_example_rmsnorm_cpp",
    cpp_sources=f"#define ROWS_PER_CHUNK {ROWS_PER_CHUNK}\n" + _CPP_SOURCE,
    functions=["add_rmsnorm"],
    extra_cflags=["-O3", "-march=native", "-fopenmp"],
    extra_ldflags=["-fopenmp"],
    verbose=False,
)


class ModelNew(nn.Module):
    def __init__(self, hidden: int, eps: float = EPS):
        super().__init__()
        self.eps = eps
        # Same name/shape/init as the reference so the harness's state_dict copy lines up.
        self.weight = nn.Parameter(torch.randn(hidden))

    def forward(self, x: torch.Tensor, residual: torch.Tensor) -> torch.Tensor:
        return _ext.add_rmsnorm(
            x.contiguous(), residual.contiguous(), self.weight.detach().contiguous(), float(self.eps)
        )
