"""KernelEvolve export of run 20261202-070122-bf1b8d for l3_1_MLP.py.

Shape-aware dispatch: each shape case below runs the fastest correct kernel measured on it; cases where no
kernel beat the baseline, and every other shape, run the PyTorch reference.

| case | shape | kernel | speedup |
| --- | --- | --- | --- |
| 0 | - | node 79 | 2.02x |
"""

import linecache
import types

import torch
import torch.nn as nn

_REFERENCE = 'import torch\nimport torch.nn as nn\nimport torch.nn.functional as F\n\nclass Model(nn.Module):\n    def __init__(self, input_size, layer_sizes, output_size):\n        """\n        :param input_size: The number of input features\n        :param layer_sizes: A list of ints containing the sizes of each hidden layer\n        :param output_size: The number of output features\n        """\n        super(Model, self).__init__()\n        \n        layers = []\n        current_input_size = input_size\n        \n        for layer_size in layer_sizes:\n            layers.append(nn.Linear(current_input_size, layer_size))\n            layers.append(nn.ReLU())\n            current_input_size = layer_size\n        \n        layers.append(nn.Linear(current_input_size, output_size))\n        \n        self.network = nn.Sequential(*layers)\n    \n    def forward(self, x):\n        """\n        :param x: The input tensor, shape (batch_size, input_size)\n        :return: The output tensor, shape (batch_size, output_size)\n        """\n        return self.network(x)\n\n# Test code\nbatch_size = 128\ninput_size = 16384\nlayer_sizes = [16384, 16384]\noutput_size = 8192\n\ndef get_inputs():\n    return [torch.rand(batch_size, input_size)]\n\ndef get_init_inputs():\n    return [input_size, layer_sizes, output_size]'

_KERNELS = {
    79: 'import torch\nimport torch.nn as nn\nimport triton\nimport triton.language as tl\n\n# ----------------------------------------------------------------------------\n# Launch parameters (module-level so the tuner can rewrite them)\n# ----------------------------------------------------------------------------\nBLOCK_M = 128\nBLOCK_N = 128\nBLOCK_K = 32\nNUM_WARPS = 8\nNUM_STAGES = 3\nRED_BLOCK = 1024\n\nTUNABLES = {\n    "BLOCK_M": [64, 128],\n    "BLOCK_N": [64, 128],\n    "BLOCK_K": [16, 32],\n    "NUM_WARPS": [4, 8],\n    "NUM_STAGES": [2, 3, 4],\n    "RED_BLOCK": [512, 1024, 2048],\n}\n\n\n# ----------------------------------------------------------------------------\n# Kernels\n# ----------------------------------------------------------------------------\n@triton.jit\ndef _tf32_hi(x):\n    # Round an fp32 value to the nearest TF32 value (10 explicit mantissa bits,\n    # ties away from zero). The result is an exact fp32 number whose low 13\n    # mantissa bits are zero, so x - hi is exact (Sterbenz).\n    bits = x.to(tl.int32, bitcast=True)\n    bits = (bits + 4096) & -8192\n    return bits.to(tl.float32, bitcast=True)\n\n\n@triton.jit\ndef _dot_3xtf32(a, b):\n    # float32-accurate product of one K chunk: a*b ~= a_hi*b_hi + a_lo*b_hi + a_hi*b_lo\n    # (the a_lo*b_lo term is ~2^-24 relative, as in tf32x3). The three tensor-core\n    # products chain into one chunk-local sum started from zero; the caller adds\n    # it to the fp32 accumulator with an IEEE add, so long-K accumulation is not\n    # done inside the tensor core.\n    a_hi = _tf32_hi(a)\n    a_lo = a - a_hi\n    b_hi = _tf32_hi(b)\n    b_lo = b - b_hi\n    part = tl.dot(a_lo, b_hi, input_precision="tf32")\n    part = tl.dot(a_hi, b_lo, part, input_precision="tf32")\n    part = tl.dot(a_hi, b_hi, part, input_precision="tf32")\n    return part\n\n\n@triton.jit\ndef _linear_kernel(\n    x_ptr, w_ptr, b_ptr, y_ptr, ws_ptr,\n    M, N, K, k_per_split,\n    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,\n    SPLIT_K: tl.constexpr, EVEN_K: tl.constexpr, APPLY_RELU: tl.constexpr,\n):\n    # y[m, n] = sum_k x[m, k] * w[n, k] + b[n]   (x: [M, K], w: [N, K], both contiguous)\n    pid = tl.program_id(0)\n    pid_k = tl.program_id(1)\n    num_pid_m = tl.cdiv(M, BLOCK_M)\n    # M tiles that share a W tile run next to each other (W stays in L2)\n    pid_m = pid % num_pid_m\n    pid_n = pid // num_pid_m\n\n    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)\n    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)\n    rm = offs_m % M  # clamped rows/cols: loads always in bounds, stores masked\n    rn = offs_n % N\n    offs_k = tl.arange(0, BLOCK_K)\n\n    k_start = pid_k * k_per_split\n    a_ptrs = x_ptr + rm.to(tl.int64)[:, None] * K + (k_start + offs_k)[None, :]\n    # W^T tile [BLOCK_K, BLOCK_N], contiguous along K (K-major B operand)\n    b_ptrs = w_ptr + rn.to(tl.int64)[None, :] * K + (k_start + offs_k)[:, None]\n\n    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)\n    if EVEN_K:\n        for k in range(0, k_per_split, BLOCK_K):\n            a = tl.load(a_ptrs)\n            b = tl.load(b_ptrs)\n            acc += _dot_3xtf32(a, b)\n            a_ptrs += BLOCK_K\n            b_ptrs += BLOCK_K\n    else:\n        k_len = tl.minimum(K - k_start, k_per_split)\n        for k in range(0, k_len, BLOCK_K):\n            kmask = offs_k < (k_len - k)\n            a = tl.load(a_ptrs, mask=kmask[None, :], other=0.0)\n            b = tl.load(b_ptrs, mask=kmask[:, None], other=0.0)\n            acc += _dot_3xtf32(a, b)\n            a_ptrs += BLOCK_K\n            b_ptrs += BLOCK_K\n\n    mask = (offs_m[:, None] < M) & (offs_n[None, :] < N)\n    if SPLIT_K == 1:\n        bias = tl.load(b_ptr + rn)\n        acc = acc + bias[None, :]\n        if APPLY_RELU:\n            acc = tl.maximum(acc, 0.0)\n        y_ptrs = y_ptr + offs_m.to(tl.int64)[:, None] * N + offs_n[None, :]\n        tl.store(y_ptrs, acc, mask=mask)\n    else:\n        ws_ptrs = (ws_ptr + pid_k.to(tl.int64) * M * N\n                   + offs_m.to(tl.int64)[:, None] * N + offs_n[None, :])\n        tl.store(ws_ptrs, acc, mask=mask)\n\n\n@triton.jit\ndef _splitk_reduce_kernel(\n    ws_ptr, b_ptr, y_ptr, numel, N,\n    SPLIT_K: tl.constexpr, APPLY_RELU: tl.constexpr, BLOCK: tl.constexpr,\n):\n    pid = tl.program_id(0)\n    offs = pid.to(tl.int64) * BLOCK + tl.arange(0, BLOCK)\n    mask = offs < numel\n    acc = tl.load(ws_ptr + offs, mask=mask, other=0.0)\n    for s in tl.static_range(1, SPLIT_K):  # fixed order -> deterministic\n        acc += tl.load(ws_ptr + (offs + s * numel), mask=mask, other=0.0)\n    col = offs % N\n    bias = tl.load(b_ptr + col, mask=mask, other=0.0)\n    acc = acc + bias\n    if APPLY_RELU:\n        acc = tl.maximum(acc, 0.0)\n    tl.store(y_ptr + offs, acc, mask=mask)\n\n\n# ----------------------------------------------------------------------------\n# Host side\n# ----------------------------------------------------------------------------\n_NUM_SMS = None\n\n\ndef _num_sms(device):\n    global _NUM_SMS\n    if _NUM_SMS is None:\n        _NUM_SMS = torch.cuda.get_device_properties(device).multi_processor_count\n    return _NUM_SMS\n\n\ndef _linear(x, w, b, relu):\n    M, K = x.shape\n    N = w.shape[0]\n    y = torch.empty((M, N), device=x.device, dtype=torch.float32)\n    if M == 0 or N == 0:\n        return y\n\n    num_m = triton.cdiv(M, BLOCK_M)\n    num_n = triton.cdiv(N, BLOCK_N)\n    tiles = num_m * num_n\n    k_blocks = max(1, triton.cdiv(K, BLOCK_K))\n\n    split = 1\n    sms = _num_sms(x.device)\n    if tiles < sms:\n        split = max(1, min(sms // tiles, k_blocks // 64))\n    k_per_split = triton.cdiv(k_blocks, split) * BLOCK_K\n    split = max(1, triton.cdiv(K, k_per_split))\n    even_k = (K % k_per_split == 0)\n\n    if split > 1:\n        ws = torch.empty((split, M, N), device=x.device, dtype=torch.float32)\n    else:\n        ws = y\n\n    grid = (tiles, split)\n    _linear_kernel[grid](\n        x, w, b, y, ws,\n        M, N, K, k_per_split,\n        BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N, BLOCK_K=BLOCK_K,\n        SPLIT_K=split, EVEN_K=even_k, APPLY_RELU=relu,\n        num_warps=NUM_WARPS, num_stages=NUM_STAGES,\n    )\n    if split > 1:\n        numel = M * N\n        _splitk_reduce_kernel[(triton.cdiv(numel, RED_BLOCK),)](\n            ws, b, y, numel, N,\n            SPLIT_K=split, APPLY_RELU=relu, BLOCK=RED_BLOCK,\n            num_warps=4,\n        )\n    return y\n\n\nclass ModelNew(nn.Module):\n    def __init__(self, input_size, layer_sizes, output_size):\n        super(ModelNew, self).__init__()\n        layers = []\n        current_input_size = input_size\n        for layer_size in layer_sizes:\n            layers.append(nn.Linear(current_input_size, layer_size))\n            layers.append(nn.ReLU())\n            current_input_size = layer_size\n        layers.append(nn.Linear(current_input_size, output_size))\n        self.network = nn.Sequential(*layers)\n        self._linear_idx = [i for i, m in enumerate(self.network) if isinstance(m, nn.Linear)]\n\n    def forward(self, x):\n        h = x.contiguous()\n        if h.dtype != torch.float32:\n            h = h.to(torch.float32)\n        n = len(self._linear_idx)\n        for j, idx in enumerate(self._linear_idx):\n            lin = self.network[idx]\n            w = lin.weight.contiguous()\n            b = lin.bias.contiguous()\n            h = _linear(h, w, b, relu=(j < n - 1))\n        return h\n',
}

# (pattern, node) per shape case a kernel won, in case order; None in a pattern matches any size or value.
_DISPATCH = [
    ((((128, 16384), 'torch.float32'),), 79),
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
