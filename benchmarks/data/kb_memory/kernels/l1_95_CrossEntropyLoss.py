"""KernelEvolve export of run 20261202-070122-4c8ed2 for l1_95_CrossEntropyLoss.py.

Shape-aware dispatch: each shape case below runs the fastest correct kernel measured on it; cases where no
kernel beat the baseline, and every other shape, run the PyTorch reference.

| case | shape | kernel | speedup |
| --- | --- | --- | --- |
| 0 | - | node 25 | 3.03x |
"""

import linecache
import types

import torch
import torch.nn as nn

_REFERENCE = 'import torch\nimport torch.nn as nn\n\nclass Model(nn.Module):\n    """\n    A model that computes Cross Entropy Loss for multi-class classification tasks.\n\n    Parameters:\n        None\n    """\n    def __init__(self):\n        super(Model, self).__init__()\n\n    def forward(self, predictions, targets):\n        return torch.nn.functional.cross_entropy(predictions, targets)\n\nbatch_size = 32768\nnum_classes = 4096\ninput_shape = (num_classes,)\ndim = 1\n\ndef get_inputs():\n    return [torch.rand(batch_size, *input_shape), torch.randint(0, num_classes, (batch_size,))]\n\ndef get_init_inputs():\n    return []\n'

_KERNELS = {
    25: 'import torch\nimport torch.nn as nn\nfrom torch.utils.cpp_extension import load_inline\n\n# ---------------------------------------------------------------------------\n# Launch parameters (formatted into the CUDA source; each value builds its own extension)\n# ---------------------------------------------------------------------------\nWARPS = 8      # warps per block\nRPW = 2        # rows handled by each warp\nUNROLL = 8     # float4 loads in flight per lane per chunk\n\nTUNABLES = {"WARPS": [4, 8, 16], "RPW": [1, 2, 4], "UNROLL": [4, 8, 16]}\n\n_cpp_src = r"""\n#include <torch/extension.h>\nvoid ce_forward(torch::Tensor x, torch::Tensor t, torch::Tensor psum, torch::Tensor pcnt,\n                torch::Tensor counter, torch::Tensor out, int64_t ignore_index);\n"""\n\n_cuda_src = r"""\n#include <torch/extension.h>\n#include <ATen/cuda/CUDAContext.h>\n#include <cuda_runtime.h>\n#include <math.h>\n#include <stdint.h>\n\n#define WARPS_PER_BLOCK __WARPS__\n#define ROWS_PER_WARP __RPW__\n#define UNROLL __UNROLL__\n\n// merge (m, s) with (om, os): s = s*e^(m-nm) + os*e^(om-nm)\n__device__ __forceinline__ void lse_merge(float& m, float& s, float om, float os) {\n    float nm = fmaxf(m, om);\n    if (nm == -INFINITY) return;                 // both empty\n    float a = (m  == -INFINITY) ? 0.f : s  * expf(m  - nm);\n    float b = (om == -INFINITY) ? 0.f : os * expf(om - nm);\n    m = nm;\n    s = a + b;\n}\n\ntemplate <int K>\n__device__ __forceinline__ void process_chunk(const float (&f)[K], float& m, float& s) {\n    float cm = f[0];\n#pragma unroll\n    for (int k = 1; k < K; ++k) cm = fmaxf(cm, f[k]);\n    float nm = fmaxf(m, cm);\n    float acc = 0.f;\n#pragma unroll\n    for (int k = 0; k < K; ++k) acc += expf(f[k] - nm);\n    // m == -inf initially -> expf(-inf) = 0, s = 0: fine while nm is finite\n    s = s * expf(m - nm) + acc;\n    m = nm;\n}\n\ntemplate <bool VEC>\n__global__ void __launch_bounds__(WARPS_PER_BLOCK * 32)\nce_fused_kernel(const float* __restrict__ x, const int64_t* __restrict__ tgt,\n                int64_t N, int C, int64_t ignore_index,\n                double* __restrict__ psum, int* __restrict__ pcnt,\n                unsigned int* __restrict__ counter, float* __restrict__ out)\n{\n    __shared__ double s_sum[WARPS_PER_BLOCK];\n    __shared__ long long s_cnt[WARPS_PER_BLOCK];\n    __shared__ bool s_last;\n\n    const int lane = threadIdx.x & 31;\n    const int warp = threadIdx.x >> 5;\n    const int64_t row0 = ((int64_t)blockIdx.x * WARPS_PER_BLOCK + warp) * ROWS_PER_WARP;\n\n    float wsum = 0.f;\n    int wcnt = 0;\n\n#pragma unroll 1\n    for (int r = 0; r < ROWS_PER_WARP; ++r) {\n        const int64_t row = row0 + r;\n        if (row >= N) break;\n        const int64_t t = __ldg(tgt + row);\n        const float* xr = x + row * (int64_t)C;\n\n        float m = -INFINITY, s = 0.f;\n        if (VEC) {\n            const float4* xv = reinterpret_cast<const float4*>(xr);\n            const int nv = C >> 2;\n            int i = lane;\n#pragma unroll 1\n            for (; i + (UNROLL - 1) * 32 < nv; i += UNROLL * 32) {\n                float4 v[UNROLL];\n#pragma unroll\n                for (int u = 0; u < UNROLL; ++u) v[u] = __ldg(xv + i + u * 32);\n                float f[4 * UNROLL];\n#pragma unroll\n                for (int u = 0; u < UNROLL; ++u) {\n                    f[4 * u + 0] = v[u].x; f[4 * u + 1] = v[u].y;\n                    f[4 * u + 2] = v[u].z; f[4 * u + 3] = v[u].w;\n                }\n                process_chunk<4 * UNROLL>(f, m, s);\n            }\n#pragma unroll 1\n            for (; i < nv; i += 32) {\n                float4 v = __ldg(xv + i);\n                float f[4] = {v.x, v.y, v.z, v.w};\n                process_chunk<4>(f, m, s);\n            }\n        } else {\n            constexpr int K = 4 * UNROLL;\n            int i = lane;\n#pragma unroll 1\n            for (; i + (K - 1) * 32 < C; i += K * 32) {\n                float f[K];\n#pragma unroll\n                for (int k = 0; k < K; ++k) f[k] = __ldg(xr + i + k * 32);\n                process_chunk<K>(f, m, s);\n            }\n#pragma unroll 1\n            for (; i < C; i += 32) {\n                float f[1] = {__ldg(xr + i)};\n                process_chunk<1>(f, m, s);\n            }\n        }\n\n        // butterfly merge: every lane ends with the same (m, s)\n#pragma unroll\n        for (int off = 16; off > 0; off >>= 1) {\n            float om = __shfl_xor_sync(0xffffffffu, m, off);\n            float os = __shfl_xor_sync(0xffffffffu, s, off);\n            lse_merge(m, s, om, os);\n        }\n\n        if (t != ignore_index) {\n            float xt = (t >= 0 && t < (int64_t)C) ? __ldg(xr + t) : NAN;\n            // -log_softmax[t] = -((x_t - max) - log(sum))\n            float loss = logf(s) - (xt - m);\n            wsum += loss;\n            wcnt += 1;\n        }\n    }\n\n    if (lane == 0) { s_sum[warp] = (double)wsum; s_cnt[warp] = wcnt; }\n    __syncthreads();\n\n    if (threadIdx.x == 0) {\n        double bs = 0.0;\n        long long bc = 0;\n#pragma unroll\n        for (int w = 0; w < WARPS_PER_BLOCK; ++w) { bs += s_sum[w]; bc += s_cnt[w]; }\n        psum[blockIdx.x] = bs;\n        pcnt[blockIdx.x] = (int)bc;\n        __threadfence();\n        unsigned int prev = atomicAdd(counter, 1u);\n        s_last = (prev == gridDim.x - 1);\n    }\n    __syncthreads();\n    if (!s_last) return;\n\n    // ---- last block: deterministic final reduction ----\n    __threadfence();\n    double a = 0.0;\n    long long c = 0;\n    for (int i = threadIdx.x; i < (int)gridDim.x; i += blockDim.x) {\n        a += __ldcg(psum + i);\n        c += (long long)__ldcg(pcnt + i);\n    }\n#pragma unroll\n    for (int off = 16; off > 0; off >>= 1) {\n        a += __shfl_xor_sync(0xffffffffu, a, off);\n        c += __shfl_xor_sync(0xffffffffu, c, off);\n    }\n    __syncthreads();\n    if (lane == 0) { s_sum[warp] = a; s_cnt[warp] = c; }\n    __syncthreads();\n    if (threadIdx.x == 0) {\n        double ts = 0.0;\n        long long tc = 0;\n#pragma unroll\n        for (int w = 0; w < WARPS_PER_BLOCK; ++w) { ts += s_sum[w]; tc += s_cnt[w]; }\n        out[0] = (float)(ts / (double)tc);   // tc == 0 -> nan, like PyTorch\n        *counter = 0u;                        // re-arm for the next call (same stream)\n    }\n}\n\nvoid ce_forward(torch::Tensor x, torch::Tensor t, torch::Tensor psum, torch::Tensor pcnt,\n                torch::Tensor counter, torch::Tensor out, int64_t ignore_index)\n{\n    const int64_t N = x.size(0);\n    const int C = (int)x.size(1);\n    const int64_t rows_per_block = (int64_t)WARPS_PER_BLOCK * ROWS_PER_WARP;\n    const int grid = (int)((N + rows_per_block - 1) / rows_per_block);\n    if (grid <= 0) return;\n    cudaStream_t stream = at::cuda::getCurrentCUDAStream();\n    const bool vec = ((C & 3) == 0) && ((reinterpret_cast<uintptr_t>(x.data_ptr<float>()) & 15) == 0);\n    dim3 block(WARPS_PER_BLOCK * 32);\n    if (vec) {\n        ce_fused_kernel<true><<<grid, block, 0, stream>>>(\n            x.data_ptr<float>(), t.data_ptr<int64_t>(), N, C, ignore_index,\n            psum.data_ptr<double>(), pcnt.data_ptr<int>(),\n            reinterpret_cast<unsigned int*>(counter.data_ptr<int>()), out.data_ptr<float>());\n    } else {\n        ce_fused_kernel<false><<<grid, block, 0, stream>>>(\n            x.data_ptr<float>(), t.data_ptr<int64_t>(), N, C, ignore_index,\n            psum.data_ptr<double>(), pcnt.data_ptr<int>(),\n            reinterpret_cast<unsigned int*>(counter.data_ptr<int>()), out.data_ptr<float>());\n    }\n}\n"""\n\n_cuda_src = (_cuda_src.replace("__WARPS__", str(WARPS))\n                      .replace("__RPW__", str(RPW))\n                      .replace("__UNROLL__", str(UNROLL)))\n\n_ext = load_inline(\n    name=f"ce_fused_onepass_w{WARPS}_r{RPW}_u{UNROLL}",\n    cpp_sources=_cpp_src,\n    cuda_sources=_cuda_src,\n    functions=["ce_forward"],\n    extra_cflags=["-O3"],\n    extra_cuda_cflags=["-O3"],\n    verbose=False,\n)\n\n\nclass ModelNew(nn.Module):\n    def __init__(self):\n        super(ModelNew, self).__init__()\n        self._counters = {}\n        self.ignore_index = -100\n\n    def _counter(self, device):\n        key = (device.type, device.index)\n        c = self._counters.get(key)\n        if c is None:\n            c = torch.zeros(1, dtype=torch.int32, device=device)\n            self._counters[key] = c\n        return c\n\n    def forward(self, predictions, targets):\n        x = predictions\n        if x.dtype != torch.float32:\n            x = x.to(torch.float32)\n        x = x.contiguous()\n        t = targets\n        if t.dtype != torch.int64:\n            t = t.to(torch.int64)\n        t = t.contiguous()\n\n        N = x.size(0)\n        dev = x.device\n        out = torch.empty((), dtype=torch.float32, device=dev)\n        if N == 0:\n            out.fill_(float("nan"))\n            return out\n\n        rows_per_block = WARPS * RPW\n        grid = (N + rows_per_block - 1) // rows_per_block\n        psum = torch.empty(grid, dtype=torch.float64, device=dev)\n        pcnt = torch.empty(grid, dtype=torch.int32, device=dev)\n        counter = self._counter(dev)\n\n        _ext.ce_forward(x, t, psum, pcnt, counter, out, self.ignore_index)\n        return out\n',
}

# (pattern, node) per shape case a kernel won, in case order; None in a pattern matches any size or value.
_DISPATCH = [
    ((((32768, 4096), 'torch.float32'), ((32768,), 'torch.int64')), 25),
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
