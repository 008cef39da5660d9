"""KernelEvolve export of run 20261202-070122-2702e0 for l2_12_Gemm_Multiply_LeakyReLU.py.

Shape-aware dispatch: each shape case below runs the fastest correct kernel measured on it; cases where no
kernel beat the baseline, and every other shape, run the PyTorch reference.

| case | shape | kernel | speedup |
| --- | --- | --- | --- |
| 0 | - | node 75 | 1.61x |
"""

import linecache
import types

import torch
import torch.nn as nn

_REFERENCE = 'import torch\nimport torch.nn as nn\n\nclass Model(nn.Module):\n    """\n    Simple model that performs a Gemm, multiplies the result, and applies LeakyReLU.\n    """\n    def __init__(self, in_features, out_features, multiplier, negative_slope):\n        super(Model, self).__init__()\n        self.gemm = nn.Linear(in_features, out_features)\n        self.multiplier = multiplier\n        self.leaky_relu = nn.LeakyReLU(negative_slope)\n\n    def forward(self, x):\n        x = self.gemm(x)\n        x = x * self.multiplier\n        x = self.leaky_relu(x)\n        return x\n\nbatch_size = 1024\nin_features  = 8192  \nout_features = 8192\nmultiplier = 2.0\nnegative_slope = 0.1\n\ndef get_inputs():\n    return [torch.rand(batch_size, in_features)]\n\ndef get_init_inputs():\n    return [in_features, out_features, multiplier, negative_slope]'

_KERNELS = {
    75: 'import torch\nimport torch.nn as nn\nimport triton\nimport triton.language as tl\n\ntry:\n    from triton.runtime.errors import OutOfResources as _OutOfResources\nexcept Exception:  # pragma: no cover\n    try:\n        from triton.runtime.autotuner import OutOfResources as _OutOfResources\n    except Exception:  # pragma: no cover\n        _OutOfResources = RuntimeError\n\n# ---------------------------------------------------------------------------\n# Launch parameters (tunable)\n# ---------------------------------------------------------------------------\n# The op is compute-bound (137 GFLOP vs 320 MB). tf32x3 adds a fixed amount\n# of accumulator-wide elementwise work per K step (temp accumulator, NaN\n# scrub, add), so a deeper BLOCK_K amortises it over twice the MMA work.\nBLOCK_M = 128\nBLOCK_N = 128\nBLOCK_K = 64\nGROUP_M = 8\nNUM_WARPS = 8\nNUM_STAGES = 2\n\n# Any combination is safe: if a config exceeds shared memory, the launcher\n# retries with fewer pipeline stages (down to 1, which always fits here).\nTUNABLES = {\n    "BLOCK_M": [64, 128],\n    "BLOCK_N": [64, 128],\n    "BLOCK_K": [32, 64],\n    "GROUP_M": [4, 8, 16],\n    "NUM_WARPS": [4, 8],\n    "NUM_STAGES": [2, 3, 4],\n}\n\n# Stage count that actually fit, per config (a launch parameter, not a result).\n_STAGES_OK = {}\n\n\n@triton.jit\ndef _gemm_mul_lrelu_kernel(\n    x_ptr, w_ptr, b_ptr, out_ptr,\n    M, N, K,\n    stride_xm, stride_xk,\n    stride_wn, stride_wk,\n    stride_om, stride_on,\n    multiplier, negative_slope,\n    HAS_BIAS: tl.constexpr,\n    EVEN_K: tl.constexpr,\n    BLOCK_M: tl.constexpr,\n    BLOCK_N: tl.constexpr,\n    BLOCK_K: tl.constexpr,\n    GROUP_M: tl.constexpr,\n):\n    # ---- grouped tile ordering for L2 reuse ----\n    pid = tl.program_id(0)\n    num_pid_m = tl.cdiv(M, BLOCK_M)\n    num_pid_n = tl.cdiv(N, BLOCK_N)\n    num_pid_in_group = GROUP_M * num_pid_n\n    group_id = pid // num_pid_in_group\n    first_pid_m = group_id * GROUP_M\n    group_size_m = min(num_pid_m - first_pid_m, GROUP_M)\n    pid_in_group = pid % num_pid_in_group\n    pid_m = first_pid_m + (pid_in_group % group_size_m)\n    pid_n = pid_in_group // group_size_m\n\n    # Row / column offsets for loads (wrapped so loads never go out of bounds;\n    # the store is masked).\n    offs_am = (pid_m * BLOCK_M + tl.arange(0, BLOCK_M)) % M\n    offs_bn = (pid_n * BLOCK_N + tl.arange(0, BLOCK_N)) % N\n    offs_am = tl.max_contiguous(tl.multiple_of(offs_am, BLOCK_M), BLOCK_M)\n    offs_bn = tl.max_contiguous(tl.multiple_of(offs_bn, BLOCK_N), BLOCK_N)\n    offs_k = tl.arange(0, BLOCK_K)\n\n    # A tile: x[m, k]  -> [BLOCK_M, BLOCK_K]   (K-major)\n    # B tile: W[n, k]^T -> [BLOCK_K, BLOCK_N]  (K-major, as tf32 wgmma wants)\n    a_ptrs = x_ptr + offs_am[:, None] * stride_xm + offs_k[None, :] * stride_xk\n    b_ptrs = w_ptr + offs_k[:, None] * stride_wk + offs_bn[None, :] * stride_wn\n\n    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)\n    num_k = tl.cdiv(K, BLOCK_K)\n    for kk in range(0, num_k):\n        if EVEN_K:\n            a = tl.load(a_ptrs)\n            b = tl.load(b_ptrs)\n        else:\n            k_rem = K - kk * BLOCK_K\n            a = tl.load(a_ptrs, mask=offs_k[None, :] < k_rem, other=0.0)\n            b = tl.load(b_ptrs, mask=offs_k[:, None] < k_rem, other=0.0)\n        # Three TF32 tensor-core products (hi*hi + hi*lo + lo*hi), fp32 accumulate:\n        # float32-accurate, no plain-TF32 rounding.\n        acc = tl.dot(a, b, acc, input_precision="tf32x3")\n        a_ptrs += BLOCK_K * stride_xk\n        b_ptrs += BLOCK_K * stride_wk\n\n    # ---- fused epilogue: + bias, * multiplier, LeakyReLU ----\n    offs_cm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)\n    offs_cn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)\n    mask_n = offs_cn < N\n    y = acc\n    if HAS_BIAS:\n        bias = tl.load(b_ptr + offs_cn, mask=mask_n, other=0.0)\n        y = y + bias[None, :]\n    y = y * multiplier\n    y = tl.where(y > 0, y, y * negative_slope)\n\n    out_ptrs = out_ptr + offs_cm[:, None] * stride_om + offs_cn[None, :] * stride_on\n    mask = (offs_cm[:, None] < M) & mask_n[None, :]\n    tl.store(out_ptrs, y, mask=mask)\n\n\ndef _is_out_of_resources(e):\n    if isinstance(e, _OutOfResources):\n        return True\n    msg = str(e).lower()\n    return ("out of resource" in msg) or ("shared memory" in msg)\n\n\ndef _launch(x2, w, bias, out, M, N, K, has_bias, multiplier, negative_slope):\n    grid = (triton.cdiv(M, BLOCK_M) * triton.cdiv(N, BLOCK_N),)\n    key = (BLOCK_M, BLOCK_N, BLOCK_K, GROUP_M, NUM_WARPS, NUM_STAGES, has_bias)\n    stages = _STAGES_OK.get(key, NUM_STAGES)\n    while True:\n        try:\n            _gemm_mul_lrelu_kernel[grid](\n                x2, w, bias, out,\n                M, N, K,\n                x2.stride(0), x2.stride(1),\n                w.stride(0), w.stride(1),\n                out.stride(0), out.stride(1),\n                multiplier, negative_slope,\n                HAS_BIAS=has_bias,\n                EVEN_K=(K % BLOCK_K == 0),\n                BLOCK_M=BLOCK_M,\n                BLOCK_N=BLOCK_N,\n                BLOCK_K=BLOCK_K,\n                GROUP_M=GROUP_M,\n                num_warps=NUM_WARPS,\n                num_stages=stages,\n            )\n            break\n        except Exception as e:  # shared-memory overflow at first compile/load\n            if stages <= 1 or not _is_out_of_resources(e):\n                raise\n            stages -= 1\n    _STAGES_OK[key] = stages\n\n\nclass ModelNew(nn.Module):\n    """\n    Gemm (x @ W^T + b) -> * multiplier -> LeakyReLU, fused into one Triton kernel.\n    """\n\n    def __init__(self, in_features, out_features, multiplier, negative_slope):\n        super(ModelNew, self).__init__()\n        # Kept as a module so parameter names (gemm.weight / gemm.bias) match the reference.\n        self.gemm = nn.Linear(in_features, out_features)\n        self.multiplier = float(multiplier)\n        self.negative_slope = float(negative_slope)\n\n    def forward(self, x):\n        in_features = self.gemm.weight.shape[1]\n        out_features = self.gemm.weight.shape[0]\n\n        orig_shape = x.shape\n        x2 = x.reshape(-1, in_features)\n        if x2.dtype != torch.float32:\n            x2 = x2.to(torch.float32)\n        x2 = x2.contiguous()\n\n        w = self.gemm.weight\n        if w.dtype != torch.float32:\n            w = w.to(torch.float32)\n        w = w.contiguous()\n\n        bias = self.gemm.bias\n        has_bias = bias is not None\n        if has_bias:\n            if bias.dtype != torch.float32:\n                bias = bias.to(torch.float32)\n            bias = bias.contiguous()\n        else:\n            bias = w  # dummy pointer, never read\n\n        M = x2.shape[0]\n        K = in_features\n        N = out_features\n\n        out = torch.empty((M, N), device=x2.device, dtype=torch.float32)\n        if M == 0 or N == 0:\n            return out.reshape(*orig_shape[:-1], N)\n\n        _launch(x2, w, bias, out, M, N, K, has_bias,\n                self.multiplier, self.negative_slope)\n        return out.reshape(*orig_shape[:-1], N)\n\n\nbatch_size = 1024\nin_features = 8192\nout_features = 8192\nmultiplier = 2.0\nnegative_slope = 0.1\n\n\ndef get_inputs():\n    return [torch.rand(batch_size, in_features)]\n\n\ndef get_init_inputs():\n    return [in_features, out_features, multiplier, negative_slope]\n',
}

# (pattern, node) per shape case a kernel won, in case order; None in a pattern matches any size or value.
_DISPATCH = [
    ((((1024, 8192), 'torch.float32'),), 75),
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
