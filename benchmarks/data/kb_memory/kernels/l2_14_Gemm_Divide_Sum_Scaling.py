"""KernelEvolve export of run 20261202-070122-7dd3a1 for l2_14_Gemm_Divide_Sum_Scaling.py.

Shape-aware dispatch: each shape case below runs the fastest correct kernel measured on it; cases where no
kernel beat the baseline, and every other shape, run the PyTorch reference.

| case | shape | kernel | speedup |
| --- | --- | --- | --- |
| 0 | - | node 76 | 31.84x |
"""

import linecache
import types

import torch
import torch.nn as nn

_REFERENCE = 'import torch\nimport torch.nn as nn\n\nclass Model(nn.Module):\n    """\n    Model that performs a matrix multiplication, division, summation, and scaling.\n    """\n    def __init__(self, input_size, hidden_size, scaling_factor):\n        super(Model, self).__init__()\n        self.weight = nn.Parameter(torch.randn(hidden_size, input_size))\n        self.scaling_factor = scaling_factor\n\n    def forward(self, x):\n        """\n        Args:\n            x (torch.Tensor): Input tensor of shape (batch_size, input_size).\n        Returns:\n            torch.Tensor: Output tensor of shape (batch_size, hidden_size).\n        """\n        x = torch.matmul(x, self.weight.T)  # Gemm\n        x = x / 2  # Divide\n        x = torch.sum(x, dim=1, keepdim=True) # Sum\n        x = x * self.scaling_factor  # Scaling\n        return x\n\n\nbatch_size   = 1024  \ninput_size   = 8192  \nhidden_size  = 8192 \nscaling_factor = 1.5\n\ndef get_inputs():\n    return [torch.rand(batch_size, input_size)]\n\ndef get_init_inputs():\n    return [input_size, hidden_size, scaling_factor]'

_KERNELS = {
    76: 'import torch\nimport torch.nn as nn\nfrom torch.utils.cpp_extension import load_inline\n\n# Columns of W / x handled per block (the block sums W over all rows for these columns,\n# then dots them with the same columns of every row of x).\nCOLS = 32\n# Threads per block of the fused kernel.\nTHREADS = 256\n# float4 loads in flight per thread in the streaming loops.\nUNROLL = 8\nTUNABLES = {"COLS": [16, 32, 64], "THREADS": [256, 512], "UNROLL": [4, 8]}\n\n_cuda_src_template = r"""\n#include <torch/extension.h>\n#include <ATen/cuda/CUDAContext.h>\n#include <cuda_runtime.h>\n#include <stdint.h>\n\n#define FC_COLS    @@COLS@@\n#define FC_THREADS @@THREADS@@\n#define FC_UNROLL  @@UNROLL@@\n\nstatic_assert(FC_COLS == 16 || FC_COLS == 32 || FC_COLS == 64 || FC_COLS == 128, "bad COLS");\nstatic_assert(FC_THREADS % 32 == 0 && FC_THREADS >= FC_COLS, "bad THREADS");\n\n// part[chunk][b] = sum_{k in chunk} x[b][k] * (sum_n W[n][k])     (fp64 throughout)\ntemplate <bool VEC>\n__global__ void __launch_bounds__(FC_THREADS)\nfused_colsum_dot_kernel(const float* __restrict__ x, const float* __restrict__ W,\n                        double* __restrict__ part, int B, int N, int K)\n{\n    constexpr int C      = FC_COLS;\n    constexpr int LPR    = C / 4;            // lanes per row (each lane: 4 columns)\n    constexpr int RPW    = 32 / LPR;         // rows per warp per step\n    constexpr int NWARPS = FC_THREADS / 32;\n    constexpr int RPB    = RPW * NWARPS;     // rows per block per step\n    constexpr int U      = FC_UNROLL;\n    const unsigned FULL = 0xffffffffu;\n\n    const int lane   = threadIdx.x & 31;\n    const int warp   = threadIdx.x >> 5;\n    const int cg     = lane % LPR;\n    const int rsub   = lane / LPR;\n    const int col    = blockIdx.x * C + cg * 4;\n    const int rstart = warp * RPW + rsub;\n\n    // ---------------- phase 1: column sums of W over all rows ----------------\n    double a0 = 0.0, a1 = 0.0, a2 = 0.0, a3 = 0.0;\n    if (VEC) {\n        if (col < K) {  // K % 4 == 0, so col + 3 < K\n            const float* base = W + col;\n            int r = rstart;\n            for (; r + (U - 1) * RPB < N; r += U * RPB) {\n                float4 v[U];\n                #pragma unroll\n                for (int u = 0; u < U; ++u)\n                    v[u] = __ldcs(reinterpret_cast<const float4*>(base + (size_t)(r + u * RPB) * (size_t)K));\n                #pragma unroll\n                for (int u = 0; u < U; ++u) {\n                    a0 += (double)v[u].x;\n                    a1 += (double)v[u].y;\n                    a2 += (double)v[u].z;\n                    a3 += (double)v[u].w;\n                }\n            }\n            for (; r < N; r += RPB) {\n                const float4 v = __ldcs(reinterpret_cast<const float4*>(base + (size_t)r * (size_t)K));\n                a0 += (double)v.x;\n                a1 += (double)v.y;\n                a2 += (double)v.z;\n                a3 += (double)v.w;\n            }\n        }\n    } else {\n        for (int r = rstart; r < N; r += RPB) {\n            const float* row = W + (size_t)r * (size_t)K;\n            if (col + 0 < K) a0 += (double)row[col + 0];\n            if (col + 1 < K) a1 += (double)row[col + 1];\n            if (col + 2 < K) a2 += (double)row[col + 2];\n            if (col + 3 < K) a3 += (double)row[col + 3];\n        }\n    }\n\n    // reduce over the RPW row slots inside the warp (lanes with equal cg)\n    #pragma unroll\n    for (int off = LPR; off < 32; off <<= 1) {\n        a0 += __shfl_xor_sync(FULL, a0, off);\n        a1 += __shfl_xor_sync(FULL, a1, off);\n        a2 += __shfl_xor_sync(FULL, a2, off);\n        a3 += __shfl_xor_sync(FULL, a3, off);\n    }\n\n    __shared__ double sh[NWARPS][C];\n    __shared__ double wsum_s[C];\n    if (lane < LPR) {\n        sh[warp][cg * 4 + 0] = a0;\n        sh[warp][cg * 4 + 1] = a1;\n        sh[warp][cg * 4 + 2] = a2;\n        sh[warp][cg * 4 + 3] = a3;\n    }\n    __syncthreads();\n    if (threadIdx.x < C) {\n        double s = 0.0;\n        #pragma unroll\n        for (int w = 0; w < NWARPS; ++w) s += sh[w][threadIdx.x];\n        wsum_s[threadIdx.x] = s;   // zero for columns >= K\n    }\n    __syncthreads();\n    const double w0 = wsum_s[cg * 4 + 0];\n    const double w1 = wsum_s[cg * 4 + 1];\n    const double w2 = wsum_s[cg * 4 + 2];\n    const double w3 = wsum_s[cg * 4 + 3];\n\n    // ---------------- phase 2: partial dots with the same columns of x ----------------\n    double* pout = part + (size_t)blockIdx.x * (size_t)B;\n    for (int bb = warp * RPW; bb < B; bb += U * RPB) {   // bb uniform across the warp\n        float4 v[U];\n        #pragma unroll\n        for (int u = 0; u < U; ++u) {\n            const int b = bb + u * RPB + rsub;\n            float4 t = make_float4(0.f, 0.f, 0.f, 0.f);\n            if (b < B) {\n                const float* xr = x + (size_t)b * (size_t)K;\n                if (VEC) {\n                    if (col < K) t = __ldcs(reinterpret_cast<const float4*>(xr + col));\n                } else {\n                    if (col + 0 < K) t.x = xr[col + 0];\n                    if (col + 1 < K) t.y = xr[col + 1];\n                    if (col + 2 < K) t.z = xr[col + 2];\n                    if (col + 3 < K) t.w = xr[col + 3];\n                }\n            }\n            v[u] = t;\n        }\n        #pragma unroll\n        for (int u = 0; u < U; ++u) {\n            double d = (double)v[u].x * w0;\n            d = fma((double)v[u].y, w1, d);\n            d = fma((double)v[u].z, w2, d);\n            d = fma((double)v[u].w, w3, d);\n            #pragma unroll\n            for (int off = 1; off < LPR; off <<= 1)\n                d += __shfl_xor_sync(FULL, d, off);\n            const int b = bb + u * RPB + rsub;\n            if (cg == 0 && b < B) pout[b] = d;\n        }\n    }\n}\n\n// out[b] = scale * sum_c part[c][b]   (fixed order, deterministic)\n__global__ void __launch_bounds__(256)\nfinal_reduce_kernel(const double* __restrict__ part, float* __restrict__ out,\n                    int B, int nchunks, double scale)\n{\n    const unsigned FULL = 0xffffffffu;\n    const int t    = threadIdx.x;\n    const int bi   = t & 7;\n    const int slot = t >> 3;          // 0..31\n    const int b    = blockIdx.x * 8 + bi;\n    double s = 0.0;\n    if (b < B) {\n        #pragma unroll 4\n        for (int c = slot; c < nchunks; c += 32) s += part[(size_t)c * (size_t)B + b];\n    }\n    s += __shfl_xor_sync(FULL, s, 8);\n    s += __shfl_xor_sync(FULL, s, 16);\n    __shared__ double sh[8][8];\n    const int warp = t >> 5, lane = t & 31;\n    if (lane < 8) sh[warp][lane] = s;\n    __syncthreads();\n    if (t < 8) {\n        double v = 0.0;\n        #pragma unroll\n        for (int w = 0; w < 8; ++w) v += sh[w][t];\n        const int bo = blockIdx.x * 8 + t;\n        if (bo < B) out[bo] = (float)(v * scale);\n    }\n}\n\ntorch::Tensor gemm_div_sum_scale(torch::Tensor x, torch::Tensor w, double scaling_factor)\n{\n    TORCH_CHECK(x.is_cuda() && w.is_cuda(), "inputs must be CUDA tensors");\n    TORCH_CHECK(x.scalar_type() == torch::kFloat32 && w.scalar_type() == torch::kFloat32,\n                "float32 expected");\n    TORCH_CHECK(x.dim() == 2 && w.dim() == 2, "2-D tensors expected");\n\n    auto xc = x.contiguous();\n    auto wc = w.contiguous();\n    const int64_t B = xc.size(0);\n    const int64_t K = xc.size(1);\n    const int64_t N = wc.size(0);\n    TORCH_CHECK(wc.size(1) == K, "shape mismatch");\n\n    auto out = torch::empty({B, 1}, xc.options());\n    if (B == 0) return out;\n\n    cudaStream_t stream = at::cuda::getCurrentCUDAStream();\n    const int64_t nchunks = (K + FC_COLS - 1) / FC_COLS;\n    auto part = torch::empty({nchunks > 0 ? nchunks * B : 1}, xc.options().dtype(torch::kFloat64));\n\n    if (nchunks > 0) {\n        const bool vec = (K % 4 == 0)\n            && ((reinterpret_cast<uintptr_t>(xc.data_ptr<float>()) & 15) == 0)\n            && ((reinterpret_cast<uintptr_t>(wc.data_ptr<float>()) & 15) == 0);\n        if (vec)\n            fused_colsum_dot_kernel<true><<<(unsigned)nchunks, FC_THREADS, 0, stream>>>(\n                xc.data_ptr<float>(), wc.data_ptr<float>(), part.data_ptr<double>(),\n                (int)B, (int)N, (int)K);\n        else\n            fused_colsum_dot_kernel<false><<<(unsigned)nchunks, FC_THREADS, 0, stream>>>(\n                xc.data_ptr<float>(), wc.data_ptr<float>(), part.data_ptr<double>(),\n                (int)B, (int)N, (int)K);\n        C10_CUDA_KERNEL_LAUNCH_CHECK();\n    }\n\n    const double scale = 0.5 * scaling_factor;\n    final_reduce_kernel<<<(unsigned)((B + 7) / 8), 256, 0, stream>>>(\n        part.data_ptr<double>(), out.data_ptr<float>(), (int)B, (int)nchunks, scale);\n    C10_CUDA_KERNEL_LAUNCH_CHECK();\n    return out;\n}\n"""\n\n_cuda_src = (_cuda_src_template\n             .replace("@@COLS@@", str(COLS))\n             .replace("@@THREADS@@", str(THREADS))\n             .replace("@@UNROLL@@", str(UNROLL)))\n\n_cpp_src = "torch::Tensor gemm_div_sum_scale(torch::Tensor x, torch::Tensor w, double scaling_factor);"\n\n_ext = load_inline(\n    name=f"l2_14_fused_colsum_dot_c{COLS}_t{THREADS}_u{UNROLL}",\n    cpp_sources=_cpp_src,\n    cuda_sources=_cuda_src,\n    functions=["gemm_div_sum_scale"],\n    extra_cflags=["-O3"],\n    extra_cuda_cflags=["-O3"],\n    verbose=False,\n)\n\n\nclass ModelNew(nn.Module):\n    """\n    out = (x @ W^T / 2).sum(dim=1, keepdim=True) * s\n        = (s / 2) * x @ colsum(W)          (exact algebraic identity)\n    One fused pass: each block sums a column slice of W (fp64) and dots it with the same\n    column slice of every row of x; a small kernel sums the per-slice partials in fixed order.\n    """\n\n    def __init__(self, input_size, hidden_size, scaling_factor):\n        super(ModelNew, self).__init__()\n        self.weight = nn.Parameter(torch.randn(hidden_size, input_size))\n        self.scaling_factor = scaling_factor\n        self._scale = float(scaling_factor)\n\n    def forward(self, x):\n        return _ext.gemm_div_sum_scale(x, self.weight, self._scale)\n',
}

# (pattern, node) per shape case a kernel won, in case order; None in a pattern matches any size or value.
_DISPATCH = [
    ((((1024, 8192), 'torch.float32'),), 76),
]


def _module(name, source):
    # Triton's compiler reads a kernel's source through inspect, which finds it in linecache under this name.
    filename = f"<kernelevolve export: {name}>"
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    module = types.ModuleType(name)
    module.__file__ = filename
    exec(compile(source, filename, "exec"), module.__dict__)
    return module


class ModelNew(nn.Module):
    def __init__(self, *args, **kwargs):
        super().__init__()
        self.reference = _module("kernelevolve_reference", _REFERENCE).Model(*args, **kwargs)
        self.kernels = nn.ModuleDict()
        for node, source in _KERNELS.items():
            kernel = _module(f"kernelevolve_node_{node}", source).ModelNew(*args, **kwargs)
            kernel.load_state_dict(self.reference.state_dict(), strict=False)
            self.kernels[str(node)] = kernel

    def forward(self, *inputs):
        key = tuple((tuple(x.shape), str(x.dtype)) if isinstance(x, torch.Tensor) else repr(x) for x in inputs)
        node = next((n for pattern, n in _DISPATCH if _matches(pattern, key)), None)
        if node is None:
            return self.reference(*inputs)
        return self.kernels[str(node)](*inputs)


def _matches(pattern: tuple, key: tuple) -> bool:
    """Whether a call's key fits a case's pattern (the same logic is written into the exported module)."""
    if len(pattern) != len(key):
        return False
    for p, k in zip(pattern, key):
        if p is None:
            continue
        if isinstance(p, tuple) and isinstance(k, tuple):
            if p[1] != k[1] or len(p[0]) != len(k[0]) or any(a is not None and a != b for a, b in zip(p[0], k[0])):
                return False
        elif p != k:
            return False
    return True
