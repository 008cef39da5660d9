"""KernelEvolve export of run 20261202-070122-6878fa for l1_88_MinGPTNewGelu.py.

Shape-aware dispatch: each shape case below runs the fastest correct kernel measured on it; cases where no
kernel beat the baseline, and every other shape, run the PyTorch reference.

| case | shape | kernel | speedup |
| --- | --- | --- | --- |
| 0 | - | node 15 | 7.85x |
"""

import linecache
import types

import torch
import torch.nn as nn

_REFERENCE = 'import torch\nimport torch.nn as nn\nimport torch.nn.functional as F\nimport math\n\n# From https://github.com/karpathy/minGPT/blob/master/mingpt/model.py\n\nclass Model(nn.Module):\n    """\n    Implementation of the GELU activation function currently in Google BERT repo (identical to OpenAI GPT).\n    Reference: Gaussian Error Linear Units (GELU) paper: https://arxiv.org/abs/1606.08415\n    """\n    def __init__(self):\n        super(Model, self).__init__()\n    \n    def forward(self, x):\n        return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * torch.pow(x, 3.0))))\n\nbatch_size = 8192\ndim = 8192\n\ndef get_inputs():\n    return [torch.rand(batch_size, dim)]\n\ndef get_init_inputs():\n    return []'

_KERNELS = {
    15: 'import torch\nimport torch.nn as nn\nimport triton\nimport triton.language as tl\n\ntry:\n    from triton.language.extra import libdevice\nexcept ImportError:  # older layouts\n    from triton.language.extra.cuda import libdevice\n\nBLOCK = 2048\nNUM_WARPS = 8\nTUNABLES = {"BLOCK": [1024, 2048, 4096, 8192], "NUM_WARPS": [4, 8, 16]}\n\n_SQRT_2_OVER_PI = 0.7978845608028654  # math.sqrt(2.0 / math.pi)\n\n\n@triton.jit\ndef _new_gelu_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):\n    pid = tl.program_id(0).to(tl.int64)\n    offs = pid * BLOCK + tl.arange(0, BLOCK)\n    mask = offs < n\n    x = tl.load(x_ptr + offs, mask=mask, other=0.0, eviction_policy="evict_first")\n    x = x.to(tl.float32)\n    # same order of operations as the reference, all in float32\n    x3 = x * x * x\n    inner = x + 0.044715 * x3\n    u = 0.7978845608028654 * inner\n    t = libdevice.tanh(u)\n    y = (0.5 * x) * (1.0 + t)\n    tl.store(y_ptr + offs, y, mask=mask, eviction_policy="evict_first")\n\n\nclass ModelNew(nn.Module):\n    def __init__(self):\n        super().__init__()\n\n    def forward(self, x: torch.Tensor) -> torch.Tensor:\n        x = x.contiguous()\n        y = torch.empty_like(x)\n        n = x.numel()\n        if n:\n            grid = (triton.cdiv(n, BLOCK),)\n            _new_gelu_kernel[grid](x, y, n, BLOCK=BLOCK, num_warps=NUM_WARPS)\n        return y\n',
}

# (pattern, node) per shape case a kernel won, in case order; None in a pattern matches any size or value.
_DISPATCH = [
    ((((8192, 8192), 'torch.float32'),), 15),
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
