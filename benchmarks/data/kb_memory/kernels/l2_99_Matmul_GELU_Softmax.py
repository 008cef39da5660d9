"""KernelEvolve export of run 20261202-070122-343158 for l2_99_Matmul_GELU_Softmax.py.

Shape-aware dispatch: each shape case below runs the fastest correct kernel measured on it; cases where no
kernel beat the baseline, and every other shape, run the PyTorch reference.

| case | shape | kernel | speedup |
| --- | --- | --- | --- |
| 0 | - | node 50 | 1.54x |
"""

import linecache
import types

import torch
import torch.nn as nn

_REFERENCE = 'import torch\nimport torch.nn as nn\n\nclass Model(nn.Module):\n    """\n    Simple model that performs a matrix multiplication, applies GELU, and then applies Softmax.\n    """\n    def __init__(self, in_features, out_features):\n        super(Model, self).__init__()\n        self.linear = nn.Linear(in_features, out_features)\n\n    def forward(self, x):\n        x = self.linear(x)\n        x = torch.nn.functional.gelu(x)\n        x = torch.nn.functional.softmax(x, dim=1)\n        return x\n\nbatch_size = 1024\nin_features = 8192\nout_features = 8192\n\ndef get_inputs():\n    return [torch.rand(batch_size, in_features)]\n\ndef get_init_inputs():\n    return [in_features, out_features]'

_KERNELS = {
    50: 'import torch\nimport torch.nn as nn\nimport triton\nimport triton.language as tl\nfrom triton.language.extra import libdevice\n\n# ---------------------------------------------------------------------------\n# Tunables\n# ---------------------------------------------------------------------------\nBLOCK_M = 128\nBLOCK_N = 128\nBLOCK_K = 32\nGROUP_M = 8\nNUM_WARPS = 8\nNUM_STAGES = 3\nSOFTMAX_BLOCK = 4096\nSOFTMAX_WARPS = 8\n\nTUNABLES = {\n    "BLOCK_M": [64, 128],\n    "BLOCK_N": [64, 128],\n    "BLOCK_K": [16, 32],\n    "GROUP_M": [8, 16],\n    "NUM_WARPS": [4, 8],\n    "NUM_STAGES": [2, 3, 4],\n    "SOFTMAX_BLOCK": [2048, 4096, 8192],\n    "SOFTMAX_WARPS": [4, 8, 16],\n}\n\n\n# ---------------------------------------------------------------------------\n# Kernel 1: y = gelu(x @ W^T + b), plus per-(row, N-tile) softmax statistics\n# ---------------------------------------------------------------------------\n@triton.jit\ndef _linear_gelu_stats_kernel(\n    x_ptr, w_ptr, b_ptr, y_ptr, pmax_ptr, psum_ptr,\n    M, N, K, NPN,\n    stride_xm, stride_xk,\n    stride_wn, stride_wk,\n    stride_ym, stride_yn,\n    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,\n    GROUP_M: tl.constexpr, EVEN_K: tl.constexpr,\n):\n    pid = tl.program_id(0)\n    num_pid_m = tl.cdiv(M, BLOCK_M)\n    num_pid_n = tl.cdiv(N, BLOCK_N)\n    num_pid_in_group = GROUP_M * num_pid_n\n    group_id = pid // num_pid_in_group\n    first_pid_m = group_id * GROUP_M\n    group_size_m = min(num_pid_m - first_pid_m, GROUP_M)\n    pid_m = first_pid_m + ((pid % num_pid_in_group) % group_size_m)\n    pid_n = (pid % num_pid_in_group) // group_size_m\n\n    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)\n    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)\n    offs_k = tl.arange(0, BLOCK_K)\n    rm = offs_m % M   # wrapped indices: loads always in bounds\n    rn = offs_n % N\n\n    a_ptrs = x_ptr + rm[:, None] * stride_xm + offs_k[None, :] * stride_xk      # [BM, BK]\n    b_ptrs = w_ptr + rn[None, :] * stride_wn + offs_k[:, None] * stride_wk      # [BK, BN] = W^T tile\n\n    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)\n    for kk in range(0, tl.cdiv(K, BLOCK_K)):\n        if EVEN_K:\n            a = tl.load(a_ptrs)\n            b = tl.load(b_ptrs)\n        else:\n            k_rem = K - kk * BLOCK_K\n            a = tl.load(a_ptrs, mask=offs_k[None, :] < k_rem, other=0.0)\n            b = tl.load(b_ptrs, mask=offs_k[:, None] < k_rem, other=0.0)\n        acc = tl.dot(a, b, acc, input_precision="tf32x3")\n        a_ptrs += BLOCK_K * stride_xk\n        b_ptrs += BLOCK_K * stride_wk\n\n    mask_m = offs_m < M\n    mask_n = offs_n < N\n\n    bias = tl.load(b_ptr + offs_n, mask=mask_n, other=0.0)\n    v = acc + bias[None, :]\n    # exact (erf) GELU, as torch.nn.functional.gelu default\n    v = 0.5 * v * (1.0 + libdevice.erf(v * 0.7071067811865476))\n\n    y_ptrs = y_ptr + offs_m[:, None] * stride_ym + offs_n[None, :] * stride_yn\n    tl.store(y_ptrs, v, mask=mask_m[:, None] & mask_n[None, :])\n\n    # per-tile row statistics for the softmax\n    vm = tl.where(mask_n[None, :], v, float("-inf"))\n    tmax = tl.max(vm, axis=1)\n    p = libdevice.exp(vm - tmax[:, None])\n    tsum = tl.sum(p, axis=1)\n    stat_off = offs_m * NPN + pid_n\n    tl.store(pmax_ptr + stat_off, tmax, mask=mask_m)\n    tl.store(psum_ptr + stat_off, tsum, mask=mask_m)\n\n\n# ---------------------------------------------------------------------------\n# Kernel 2: merge per-tile stats, normalise the row (one read + one write)\n# ---------------------------------------------------------------------------\n@triton.jit\ndef _softmax_finalize_kernel(\n    y_ptr, out_ptr, pmax_ptr, psum_ptr,\n    N, NPN, stride_ym, stride_om,\n    BLOCK_P: tl.constexpr, BLOCK: tl.constexpr,\n):\n    row = tl.program_id(0)\n    offs_p = tl.arange(0, BLOCK_P)\n    pmask = offs_p < NPN\n    pm = tl.load(pmax_ptr + row * NPN + offs_p, mask=pmask, other=float("-inf"))\n    ps = tl.load(psum_ptr + row * NPN + offs_p, mask=pmask, other=0.0)\n    m = tl.max(pm, axis=0)\n    s = tl.sum(ps * libdevice.exp(pm - m), axis=0)\n\n    y_row = y_ptr + row * stride_ym\n    o_row = out_ptr + row * stride_om\n    for start in range(0, N, BLOCK):\n        offs = start + tl.arange(0, BLOCK)\n        mask = offs < N\n        v = tl.load(y_row + offs, mask=mask, other=float("-inf"))\n        o = libdevice.exp(v - m) / s\n        tl.store(o_row + offs, o, mask=mask)\n\n\n# ---------------------------------------------------------------------------\n# Module\n# ---------------------------------------------------------------------------\nclass ModelNew(nn.Module):\n    def __init__(self, in_features, out_features):\n        super(ModelNew, self).__init__()\n        self.linear = nn.Linear(in_features, out_features)\n\n    def forward(self, x):\n        x = x.contiguous()\n        w = self.linear.weight\n        b = self.linear.bias\n        M, K = x.shape\n        N = w.shape[0]\n\n        y = torch.empty((M, N), device=x.device, dtype=torch.float32)\n        npn = triton.cdiv(N, BLOCK_N)\n        pmax = torch.empty((M, npn), device=x.device, dtype=torch.float32)\n        psum = torch.empty((M, npn), device=x.device, dtype=torch.float32)\n\n        grid = (triton.cdiv(M, BLOCK_M) * npn,)\n        _linear_gelu_stats_kernel[grid](\n            x, w, b, y, pmax, psum,\n            M, N, K, npn,\n            x.stride(0), x.stride(1),\n            w.stride(0), w.stride(1),\n            y.stride(0), y.stride(1),\n            BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N, BLOCK_K=BLOCK_K,\n            GROUP_M=GROUP_M, EVEN_K=(K % BLOCK_K == 0),\n            num_warps=NUM_WARPS, num_stages=NUM_STAGES,\n        )\n\n        block = min(SOFTMAX_BLOCK, triton.next_power_of_2(N))\n        _softmax_finalize_kernel[(M,)](\n            y, y, pmax, psum,\n            N, npn, y.stride(0), y.stride(0),\n            BLOCK_P=max(triton.next_power_of_2(npn), 2), BLOCK=block,\n            num_warps=SOFTMAX_WARPS,\n        )\n        return y\n',
}

# (pattern, node) per shape case a kernel won, in case order; None in a pattern matches any size or value.
_DISPATCH = [
    ((((1024, 8192), 'torch.float32'),), 50),
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
