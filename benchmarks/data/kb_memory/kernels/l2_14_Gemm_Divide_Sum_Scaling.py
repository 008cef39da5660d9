import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

# Columns of W / x handled per block (the block sums W over all rows for these columns,
# then dots them with the same columns of every row of x).
COLS = 32
# Threads per block of the fused kernel.
THREADS = 256
# float4 loads in flight per thread in the streaming loops.
UNROLL = 8
TUNABLES = {"COLS": [16, 32, 64], "THREADS": [256, 512], "UNROLL": [4, 8]}

_cuda_src_template = r"""
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>
#include <cuda_runtime.h>
#include <stdint.h>

#define FC_COLS    @@COLS@@
#define FC_THREADS @@THREADS@@
#define FC_UNROLL  @@UNROLL@@

static_assert(FC_COLS == 16 || FC_COLS == 32 || FC_COLS == 64 || FC_COLS == 128, "bad COLS");
static_assert(FC_THREADS % 32 == 0 && FC_THREADS >= FC_COLS, "bad THREADS");

// part[chunk][b] = sum_{k in chunk} x[b][k] * (sum_n W[n][k])     (fp64 throughout)
template <bool VEC>
__global__ void __launch_bounds__(FC_THREADS)
fused_colsum_dot_kernel(const float* __restrict__ x, const float* __restrict__ W,
                        double* __restrict__ part, int B, int N, int K)
{
    constexpr int C      = FC_COLS;
    constexpr int LPR    = C / 4;            // lanes per row (each lane: 4 columns)
    constexpr int RPW    = 32 / LPR;         // rows per warp per step
    constexpr int NWARPS = FC_THREADS / 32;
    constexpr int RPB    = RPW * NWARPS;     // rows per block per step
    constexpr int U      = FC_UNROLL;
    const unsigned FULL = 0xffffffffu;

    const int lane   = threadIdx.x & 31;
    const int warp   = threadIdx.x >> 5;
    const int cg     = lane % LPR;
    const int rsub   = lane / LPR;
    const int col    = blockIdx.x * C + cg * 4;
    const int rstart = warp * RPW + rsub;

    // ---------------- phase 1: column sums of W over all rows ----------------
    double a0 = 0.0, a1 = 0.0, a2 = 0.0, a3 = 0.0;
    if (VEC) {
        if (col < K) {  // K % 4 == 0, so col + 3 < K
            const float* base = W + col;
            int r = rstart;
            for (; r + (U - 1) * RPB < N; r += U * RPB) {
                float4 v[U];
                #pragma unroll
                for (int u = 0; u < U; ++u)
                    v[u] = __ldcs(reinterpret_cast<const float4*>(base + (size_t)(r + u * RPB) * (size_t)K));
                #pragma unroll
                for (int u = 0; u < U; ++u) {
                    a0 += (double)v[u].x;
                    a1 += (double)v[u].y;
                    a2 += (double)v[u].z;
                    a3 += (double)v[u].w;
                }
            }
            for (; r < N; r += RPB) {
                const float4 v = __ldcs(reinterpret_cast<const float4*>(base + (size_t)r * (size_t)K));
                a0 += (double)v.x;
                a1 += (double)v.y;
                a2 += (double)v.z;
                a3 += (double)v.w;
            }
        }
    } else {
        for (int r = rstart; r < N; r += RPB) {
            const float* row = W + (size_t)r * (size_t)K;
            if (col + 0 < K) a0 += (double)row[col + 0];
            if (col + 1 < K) a1 += (double)row[col + 1];
            if (col + 2 < K) a2 += (double)row[col + 2];
            if (col + 3 < K) a3 += (double)row[col + 3];
        }
    }

    // reduce over the RPW row slots inside the warp (lanes with equal cg)
    #pragma unroll
    for (int off = LPR; off < 32; off <<= 1) {
        a0 += __shfl_xor_sync(FULL, a0, off);
        a1 += __shfl_xor_sync(FULL, a1, off);
        a2 += __shfl_xor_sync(FULL, a2, off);
        a3 += __shfl_xor_sync(FULL, a3, off);
    }

    __shared__ double sh[NWARPS][C];
    __shared__ double wsum_s[C];
    if (lane < LPR) {
        sh[warp][cg * 4 + 0] = a0;
        sh[warp][cg * 4 + 1] = a1;
        sh[warp][cg * 4 + 2] = a2;
        sh[warp][cg * 4 + 3] = a3;
    }
    __syncthreads();
    if (threadIdx.x < C) {
        double s = 0.0;
        #pragma unroll
        for (int w = 0; w < NWARPS; ++w) s += sh[w][threadIdx.x];
        wsum_s[threadIdx.x] = s;   // zero for columns >= K
    }
    __syncthreads();
    const double w0 = wsum_s[cg * 4 + 0];
    const double w1 = wsum_s[cg * 4 + 1];
    const double w2 = wsum_s[cg * 4 + 2];
    const double w3 = wsum_s[cg * 4 + 3];

    // ---------------- phase 2: partial dots with the same columns of x ----------------
    double* pout = part + (size_t)blockIdx.x * (size_t)B;
    for (int bb = warp * RPW; bb < B; bb += U * RPB) {   // bb uniform across the warp
        float4 v[U];
        #pragma unroll
        for (int u = 0; u < U; ++u) {
            const int b = bb + u * RPB + rsub;
            float4 t = make_float4(0.f, 0.f, 0.f, 0.f);
            if (b < B) {
                const float* xr = x + (size_t)b * (size_t)K;
                if (VEC) {
                    if (col < K) t = __ldcs(reinterpret_cast<const float4*>(xr + col));
                } else {
                    if (col + 0 < K) t.x = xr[col + 0];
                    if (col + 1 < K) t.y = xr[col + 1];
                    if (col + 2 < K) t.z = xr[col + 2];
                    if (col + 3 < K) t.w = xr[col + 3];
                }
            }
            v[u] = t;
        }
        #pragma unroll
        for (int u = 0; u < U; ++u) {
            double d = (double)v[u].x * w0;
            d = fma((double)v[u].y, w1, d);
            d = fma((double)v[u].z, w2, d);
            d = fma((double)v[u].w, w3, d);
            #pragma unroll
            for (int off = 1; off < LPR; off <<= 1)
                d += __shfl_xor_sync(FULL, d, off);
            const int b = bb + u * RPB + rsub;
            if (cg == 0 && b < B) pout[b] = d;
        }
    }
}

// out[b] = scale * sum_c part[c][b]   (fixed order, deterministic)
__global__ void __launch_bounds__(256)
final_reduce_kernel(const double* __restrict__ part, float* __restrict__ out,
                    int B, int nchunks, double scale)
{
    const unsigned FULL = 0xffffffffu;
    const int t    = threadIdx.x;
    const int bi   = t & 7;
    const int slot = t >> 3;          // 0..31
    const int b    = blockIdx.x * 8 + bi;
    double s = 0.0;
    if (b < B) {
        #pragma unroll 4
        for (int c = slot; c < nchunks; c += 32) s += part[(size_t)c * (size_t)B + b];
    }
    s += __shfl_xor_sync(FULL, s, 8);
    s += __shfl_xor_sync(FULL, s, 16);
    __shared__ double sh[8][8];
    const int warp = t >> 5, lane = t & 31;
    if (lane < 8) sh[warp][lane] = s;
    __syncthreads();
    if (t < 8) {
        double v = 0.0;
        #pragma unroll
        for (int w = 0; w < 8; ++w) v += sh[w][t];
        const int bo = blockIdx.x * 8 + t;
        if (bo < B) out[bo] = (float)(v * scale);
    }
}

torch::Tensor gemm_div_sum_scale(torch::Tensor x, torch::Tensor w, double scaling_factor)
{
    TORCH_CHECK(x.is_cuda() && w.is_cuda(), "inputs must be CUDA tensors");
    TORCH_CHECK(x.scalar_type() == torch::kFloat32 && w.scalar_type() == torch::kFloat32,
                "float32 expected");
    TORCH_CHECK(x.dim() == 2 && w.dim() == 2, "2-D tensors expected");

    auto xc = x.contiguous();
    auto wc = w.contiguous();
    const int64_t B = xc.size(0);
    const int64_t K = xc.size(1);
    const int64_t N = wc.size(0);
    TORCH_CHECK(wc.size(1) == K, "shape mismatch");

    auto out = torch::empty({B, 1}, xc.options());
    if (B == 0) return out;

    cudaStream_t stream = at::cuda::getCurrentCUDAStream();
    const int64_t nchunks = (K + FC_COLS - 1) / FC_COLS;
    auto part = torch::empty({nchunks > 0 ? nchunks * B : 1}, xc.options().dtype(torch::kFloat64));

    if (nchunks > 0) {
        const bool vec = (K % 4 == 0)
            && ((reinterpret_cast<uintptr_t>(xc.data_ptr<float>()) & 15) == 0)
            && ((reinterpret_cast<uintptr_t>(wc.data_ptr<float>()) & 15) == 0);
        if (vec)
            fused_colsum_dot_kernel<true><<<(unsigned)nchunks, FC_THREADS, 0, stream>>>(
                xc.data_ptr<float>(), wc.data_ptr<float>(), part.data_ptr<double>(),
                (int)B, (int)N, (int)K);
        else
            fused_colsum_dot_kernel<false><<<(unsigned)nchunks, FC_THREADS, 0, stream>>>(
                xc.data_ptr<float>(), wc.data_ptr<float>(), part.data_ptr<double>(),
                (int)B, (int)N, (int)K);
        C10_CUDA_KERNEL_LAUNCH_CHECK();
    }

    const double scale = 0.5 * scaling_factor;
    final_reduce_kernel<<<(unsigned)((B + 7) / 8), 256, 0, stream>>>(
        part.data_ptr<double>(), out.data_ptr<float>(), (int)B, (int)nchunks, scale);
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    return out;
}
"""

_cuda_src = (_cuda_src_template
             .replace("@@COLS@@", str(COLS))
             .replace("@@THREADS@@", str(THREADS))
             .replace("@@UNROLL@@", str(UNROLL)))

_cpp_src = "torch::Tensor gemm_div_sum_scale(torch::Tensor x, torch::Tensor w, double scaling_factor);"

_ext = load_inline(
    name=f"l2_14_fused_colsum_dot_c{COLS}_t{THREADS}_u{UNROLL}",
    cpp_sources=_cpp_src,
    cuda_sources=_cuda_src,
    functions=["gemm_div_sum_scale"],
    extra_cflags=["-O3"],
    extra_cuda_cflags=["-O3"],
    verbose=False,
)


class ModelNew(nn.Module):
    """
    out = (x @ W^T / 2).sum(dim=1, keepdim=True) * s
        = (s / 2) * x @ colsum(W)          (exact algebraic identity)
    One fused pass: each block sums a column slice of W (fp64) and dots it with the same
    column slice of every row of x; a small kernel sums the per-slice partials in fixed order.
    """

    def __init__(self, input_size, hidden_size, scaling_factor):
        super(ModelNew, self).__init__()
        self.weight = nn.Parameter(torch.randn(hidden_size, input_size))
        self.scaling_factor = scaling_factor
        self._scale = float(scaling_factor)

    def forward(self, x):
        return _ext.gemm_div_sum_scale(x, self.weight, self._scale)
