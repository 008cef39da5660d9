"""KernelEvolve export of run 20261202-070122-6363df for l1_40_LayerNorm.py.

Shape-aware dispatch: each shape case below runs the fastest correct kernel measured on it; cases where no
kernel beat the baseline, and every other shape, run the PyTorch reference.

| case | shape | kernel | speedup |
| --- | --- | --- | --- |
| 0 | - | node 13 | 38.14x |
"""

import linecache
import types

import torch
import torch.nn as nn

_REFERENCE = 'import torch\nimport torch.nn as nn\n\nclass Model(nn.Module):\n    """\n    Simple model that performs Layer Normalization.\n    """\n    def __init__(self, normalized_shape: tuple):\n        """\n        Initializes the LayerNorm layer.\n\n        Args:\n            normalized_shape (tuple): Shape of the input tensor to be normalized.\n        """\n        super(Model, self).__init__()\n        self.ln = nn.LayerNorm(normalized_shape=normalized_shape)\n\n    def forward(self, x: torch.Tensor) -> torch.Tensor:\n        """\n        Applies Layer Normalization to the input tensor.\n\n        Args:\n            x (torch.Tensor): Input tensor of shape (*, normalized_shape).\n\n        Returns:\n            torch.Tensor: Output tensor with Layer Normalization applied, same shape as input.\n        """\n        return self.ln(x)\n\nbatch_size = 16\nfeatures = 64\ndim1 = 256\ndim2 = 256\n\ndef get_inputs():\n    x = torch.rand(batch_size, features, dim1, dim2)\n    return [x]\n\ndef get_init_inputs():\n    return [(features, dim1, dim2)]'

_KERNELS = {
    13: 'import torch\nimport torch.nn as nn\nimport triton\nimport triton.language as tl\n\n# ---------------------------------------------------------------------------\n# Launch parameters\n# ---------------------------------------------------------------------------\nSTATS_BLOCK = 4096      # elements per (row, chunk) partial-statistics program\nSTATS_WARPS = 8\nNORM_BLOCK = 2048       # columns per normalize program\nNORM_WARPS = 16\nNORM_ROWS = 4           # rows handled per normalize program (weight/bias loaded once)\nCOMBINE_BLOCK = 1024    # partials per iteration in the per-row combine kernel\n\nTUNABLES = {\n    "STATS_BLOCK": [2048, 4096, 8192],\n    "STATS_WARPS": [4, 8, 16],\n    "NORM_BLOCK": [2048, 4096, 8192],\n    "NORM_WARPS": [4, 8, 16],\n    "NORM_ROWS": [1, 2, 4, 8, 16],\n}\n\n\n# ---------------------------------------------------------------------------\n# Pass 1: per-(row, chunk) partial statistics: chunk sum and chunk M2\n# (sum of squared deviations from the chunk\'s own mean, computed from registers).\n# Grid is chunk-major so the last programs to run touch the tail chunks of\n# every row -> those stay in L2 for the (reversed) normalize pass.\n# ---------------------------------------------------------------------------\n@triton.jit\ndef _ln_partial_stats(x_ptr, psum_ptr, pm2_ptr, M, N, C, BLOCK: tl.constexpr):\n    pid = tl.program_id(0)\n    chunk = pid // M\n    row = pid % M\n    offs = chunk * BLOCK + tl.arange(0, BLOCK)\n    mask = offs < N\n    x = tl.load(x_ptr + row.to(tl.int64) * N + offs, mask=mask, other=0.0)\n    cnt = tl.sum(mask.to(tl.float32), axis=0)\n    s = tl.sum(x, axis=0)\n    mu = s / cnt\n    d = tl.where(mask, x - mu, 0.0)\n    m2 = tl.sum(d * d, axis=0)\n    tl.store(psum_ptr + row * C + chunk, s)\n    tl.store(pm2_ptr + row * C + chunk, m2)\n\n\n# ---------------------------------------------------------------------------\n# Pass 2: combine the partials of one row in float64 (Chan\'s parallel formula):\n#   mean = sum(s_i) / N\n#   M2   = sum(m2_i + n_i * (s_i / n_i - mean)^2)\n# ---------------------------------------------------------------------------\n@triton.jit(do_not_specialize=["N", "C"])\ndef _ln_combine(psum_ptr, pm2_ptr, mean_ptr, rstd_ptr, N, C, eps,\n                SBLOCK: tl.constexpr, BLOCK: tl.constexpr):\n    r = tl.program_id(0)\n    base = r * C\n    Nf = N.to(tl.float64)\n\n    acc = tl.zeros([BLOCK], dtype=tl.float64)\n    for c0 in range(0, C, BLOCK):\n        idx = c0 + tl.arange(0, BLOCK)\n        m = idx < C\n        s = tl.load(psum_ptr + base + idx, mask=m, other=0.0)\n        acc += s.to(tl.float64)\n    mean = tl.sum(acc, axis=0) / Nf\n\n    acc2 = tl.zeros([BLOCK], dtype=tl.float64)\n    for c0 in range(0, C, BLOCK):\n        idx = c0 + tl.arange(0, BLOCK)\n        m = idx < C\n        s = tl.load(psum_ptr + base + idx, mask=m, other=0.0).to(tl.float64)\n        q = tl.load(pm2_ptr + base + idx, mask=m, other=0.0).to(tl.float64)\n        n = N - idx * SBLOCK\n        n = tl.where(n > SBLOCK, SBLOCK, n)\n        nf = tl.where(m, n.to(tl.float64), 1.0)\n        dm = s / nf - mean\n        acc2 += tl.where(m, q + nf * dm * dm, 0.0)\n    var = tl.sum(acc2, axis=0) / Nf\n    rstd = 1.0 / tl.sqrt(var + eps)\n    tl.store(mean_ptr + r, mean.to(tl.float32))\n    tl.store(rstd_ptr + r, rstd.to(tl.float32))\n\n\n# ---------------------------------------------------------------------------\n# Pass 3: y = (x - mean) * rstd * w + b.\n# Each program owns one column chunk and ROWS rows: weight/bias are loaded once\n# and reused across the rows. Programs walk the chunks in reverse of pass 1 so\n# the L2-resident tail of x is consumed first.\n# ---------------------------------------------------------------------------\n@triton.jit\ndef _ln_normalize(x_ptr, w_ptr, b_ptr, y_ptr, mean_ptr, rstd_ptr, M, N, G,\n                  BLOCK: tl.constexpr, ROWS: tl.constexpr):\n    p = tl.num_programs(0) - 1 - tl.program_id(0)\n    chunk = p // G\n    rg = p % G\n    offs = chunk * BLOCK + tl.arange(0, BLOCK)\n    cmask = offs < N\n    w = tl.load(w_ptr + offs, mask=cmask, other=0.0)\n    b = tl.load(b_ptr + offs, mask=cmask, other=0.0)\n    for i in range(ROWS):\n        r = rg * ROWS + i\n        rok = r < M\n        rr = tl.minimum(r, M - 1)\n        mean = tl.load(mean_ptr + rr)\n        rstd = tl.load(rstd_ptr + rr)\n        base = rr.to(tl.int64) * N\n        m = cmask & rok\n        x = tl.load(x_ptr + base + offs, mask=m, other=0.0)\n        y = (x - mean) * rstd * w + b\n        tl.store(y_ptr + base + offs, y, mask=m)\n\n\nclass ModelNew(nn.Module):\n    def __init__(self, normalized_shape: tuple):\n        super(ModelNew, self).__init__()\n        # Kept so the parameters (ln.weight, ln.bias) match the reference; never called.\n        self.ln = nn.LayerNorm(normalized_shape=normalized_shape)\n        self._nshape = tuple(self.ln.normalized_shape)\n        n = 1\n        for s in self._nshape:\n            n *= int(s)\n        self._n = n\n        self._eps = float(self.ln.eps)\n\n    def forward(self, x: torch.Tensor) -> torch.Tensor:\n        N = self._n\n        out_shape = x.shape\n        x = x.contiguous()\n        lead = out_shape[: len(out_shape) - len(self._nshape)]\n        M = 1\n        for d in lead:\n            M *= int(d)\n\n        xf = x.view(M, N)\n        w = self.ln.weight.contiguous().view(N)\n        b = self.ln.bias.contiguous().view(N)\n        dev = x.device\n\n        y = torch.empty((M, N), dtype=x.dtype, device=dev)\n\n        Cs = triton.cdiv(N, STATS_BLOCK)\n        psum = torch.empty((M, Cs), dtype=torch.float32, device=dev)\n        pm2 = torch.empty((M, Cs), dtype=torch.float32, device=dev)\n        mean = torch.empty((M,), dtype=torch.float32, device=dev)\n        rstd = torch.empty((M,), dtype=torch.float32, device=dev)\n\n        _ln_partial_stats[(Cs * M,)](\n            xf, psum, pm2, M, N, Cs,\n            BLOCK=STATS_BLOCK, num_warps=STATS_WARPS,\n        )\n        _ln_combine[(M,)](\n            psum, pm2, mean, rstd, N, Cs, self._eps,\n            SBLOCK=STATS_BLOCK, BLOCK=COMBINE_BLOCK, num_warps=4,\n        )\n        Cn = triton.cdiv(N, NORM_BLOCK)\n        G = triton.cdiv(M, NORM_ROWS)\n        _ln_normalize[(Cn * G,)](\n            xf, w, b, y, mean, rstd, M, N, G,\n            BLOCK=NORM_BLOCK, ROWS=NORM_ROWS, num_warps=NORM_WARPS,\n        )\n        return y.view(out_shape)\n',
}

# (pattern, node) per shape case a kernel won, in case order; None in a pattern matches any size or value.
_DISPATCH = [
    ((((16, 64, 256, 256), 'torch.float32'),), 13),
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
