"""C++ CPU seed for merge_bucketized_dense: every feature bucketized in one call, by branch-free counting.

Technique: OpenMP over chunks of ROWS rows (a runtime argument). Per chunk and feature, the feature's column is
gathered once into a contiguous buffer, then y = #{k < len_f : B_f[k] <= x} is counted border by border over
the whole buffer: the inner loop is a float compare and an integer add over contiguous data, which the compiler
vectorises (AVX2/AVX-512), with the border a broadcast register. No branches, no binary search, one pass over x
and one over y.

Expected bottleneck: memory bandwidth at large batches (4 bytes in, 8 out per element); the strided column
gather when features are many; OpenMP fork/join at the paper's 2048 x 2 x 4.
"""

import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

# Tunable at run time (passed to the kernel, no rebuild): rows per OpenMP chunk.
ROWS = 512

TUNABLES = {"ROWS": [64, 128, 256, 512, 1024, 2048, 4096]}

_CPP_SOURCE = r"""
#include <torch/extension.h>

#include <algorithm>
#include <cstdint>
#include <vector>

torch::Tensor merge_bucketize(torch::Tensor x, torch::Tensor borders, torch::Tensor lengths, int64_t rows) {
    TORCH_CHECK(x.device().is_cpu() && x.scalar_type() == torch::kFloat32 && x.is_contiguous() && x.dim() == 2,
                "merge_bucketize: x must be a contiguous 2-D float32 CPU tensor");
    TORCH_CHECK(borders.scalar_type() == torch::kFloat32 && borders.is_contiguous() && borders.dim() == 2 &&
                    borders.size(0) == x.size(1),
                "merge_bucketize: borders must be contiguous float32 [FEATURES, BORDERS]");
    TORCH_CHECK(lengths.scalar_type() == torch::kInt64 && lengths.numel() == x.size(1),
                "merge_bucketize: lengths must be int64 [FEATURES]");
    const int64_t n = x.size(0), nf = x.size(1), nb = borders.size(1);
    auto out = torch::empty({n, nf}, x.options().dtype(torch::kInt64));
    rows = std::max<int64_t>(1, rows);
    std::vector<int64_t> len(nf);
    auto lens = lengths.contiguous();
    for (int64_t f = 0; f < nf; ++f) len[f] = std::min(std::max<int64_t>(lens.data_ptr<int64_t>()[f], 0), nb);
    const float* __restrict__ xp = x.data_ptr<float>();
    const float* __restrict__ bp = borders.data_ptr<float>();
    int64_t* __restrict__ op = out.data_ptr<int64_t>();

#pragma omp parallel
    {
        std::vector<float> col(rows);
        std::vector<int32_t> cnt(rows);
#pragma omp for schedule(static)
        for (int64_t r0 = 0; r0 < n; r0 += rows) {
            const int64_t m = std::min(rows, n - r0);
            float* __restrict__ c = col.data();
            int32_t* __restrict__ k = cnt.data();
            for (int64_t f = 0; f < nf; ++f) {
                for (int64_t i = 0; i < m; ++i) c[i] = xp[(r0 + i) * nf + f];
                std::fill(k, k + m, 0);
                const float* __restrict__ bf = bp + f * nb;
                for (int64_t j = 0; j < len[f]; ++j) {
                    const float b = bf[j];
#pragma omp simd
                    for (int64_t i = 0; i < m; ++i) k[i] += b <= c[i] ? 1 : 0;
                }
                for (int64_t i = 0; i < m; ++i) op[(r0 + i) * nf + f] = k[i];
            }
        }
    }
    return out;
}
"""

_ext = load_inline(
    name="kernelevolve_ranking_merge_bucketize_cpp",
    cpp_sources=_CPP_SOURCE,
    functions=["merge_bucketize"],
    extra_cflags=["-O3", "-march=native", "-fopenmp"],
    extra_ldflags=["-fopenmp"],
    verbose=False,
)


class ModelNew(nn.Module):
    def forward(self, x: torch.Tensor, borders: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
        return _ext.merge_bucketize(x.contiguous(), borders.contiguous(), lengths, ROWS)
