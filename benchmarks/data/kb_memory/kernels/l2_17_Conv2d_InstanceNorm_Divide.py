"""KernelEvolve export of run 20261202-070122-f655a5 for l2_17_Conv2d_InstanceNorm_Divide.py.

Shape-aware dispatch: each shape case below runs the fastest correct kernel measured on it; cases where no
kernel beat the baseline, and every other shape, run the PyTorch reference.

| case | shape | kernel | speedup |
| --- | --- | --- | --- |
| 0 | - | node 45 | 1.91x |
"""

import linecache
import types

import torch
import torch.nn as nn

_REFERENCE = 'import torch\nimport torch.nn as nn\n\nclass Model(nn.Module):\n    """\n    Simple model that performs a convolution, applies Instance Normalization, and divides by a constant.\n    """\n    def __init__(self, in_channels, out_channels, kernel_size, divide_by):\n        super(Model, self).__init__()\n        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size)\n        self.instance_norm = nn.InstanceNorm2d(out_channels)\n        self.divide_by = divide_by\n\n    def forward(self, x):\n        x = self.conv(x)\n        x = self.instance_norm(x)\n        x = x / self.divide_by\n        return x\n\nbatch_size = 128\nin_channels  = 64  \nout_channels = 128  \nheight = width = 128  \nkernel_size = 3\ndivide_by = 2.0\n\ndef get_inputs():\n    return [torch.rand(batch_size, in_channels, height, width)]\n\ndef get_init_inputs():\n    return [in_channels, out_channels, kernel_size, divide_by]'

_KERNELS = {
    45: 'import torch\nimport torch.nn as nn\nimport triton\nimport triton.language as tl\n\n# ---------------------------------------------------------------------------\n# Tunables\n# ---------------------------------------------------------------------------\nBLOCK_M = 128       # output pixels per conv tile (within one image)\nBLOCK_N = 128       # output channels per conv tile\nBLOCK_K = 32        # input channels per K step\nNUM_WARPS = 8\nNUM_STAGES = 3\nTP_BLOCK = 64       # pixels per program of the NCHW->NHWC repack\nNORM_BLOCK = 2048   # elements per iteration of the normalisation pass\nNORM_WARPS = 8\nIMG_CHUNK = 128     # images per (repack, conv, norm) round; small values keep y in L2\n\nTUNABLES = {\n    "BLOCK_M": [128, 64],\n    "BLOCK_N": [128, 64],\n    "BLOCK_K": [32, 16],\n    "NUM_WARPS": [8, 4],\n    "NUM_STAGES": [3, 2, 4],\n    "TP_BLOCK": [64, 128],\n    "NORM_BLOCK": [2048, 1024, 4096],\n    "NORM_WARPS": [8, 4],\n    "IMG_CHUNK": [128, 8, 4],\n}\n\n\n# ---------------------------------------------------------------------------\n# Kernels\n# ---------------------------------------------------------------------------\n@triton.jit\ndef _pack_weight_kernel(w_ptr, wk_ptr, TOTAL,\n                        CI: tl.constexpr, KK: tl.constexpr, BLOCK: tl.constexpr):\n    # w: [CO, CI, KH, KW] -> wk: [CO, KK, CI]  (k = tap * CI + ci, contiguous in k)\n    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)\n    msk = offs < TOTAL\n    ci = offs % CI\n    rest = offs // CI\n    tap = rest % KK\n    co = rest // KK\n    src = (co * CI + ci) * KK + tap\n    v = tl.load(w_ptr + src, mask=msk, other=0.0)\n    tl.store(wk_ptr + offs, v, mask=msk)\n\n\n@triton.jit\ndef _nchw_to_nhwc_kernel(x_ptr, xt_ptr, n0,\n                         CI: tl.constexpr, HW: tl.constexpr,\n                         BLOCK_P: tl.constexpr, BLOCK_C: tl.constexpr):\n    pid_p = tl.program_id(0)\n    n = n0 + tl.program_id(1)\n    pid_c = tl.program_id(2)\n    p = pid_p * BLOCK_P + tl.arange(0, BLOCK_P)\n    c = pid_c * BLOCK_C + tl.arange(0, BLOCK_C)\n    msk = (p < HW)[:, None] & (c < CI)[None, :]\n    img = n.to(tl.int64) * (CI * HW)\n    v = tl.load(x_ptr + img + c[None, :] * HW + p[:, None], mask=msk, other=0.0)\n    tl.store(xt_ptr + img + p[:, None] * CI + c[None, :], v, mask=msk)\n\n\n@triton.jit\ndef _conv_stats_kernel(xt_ptr, wk_ptr, y_ptr, ps_ptr, pm2_ptr, n0,\n                       CI: tl.constexpr, H: tl.constexpr, W: tl.constexpr,\n                       CO: tl.constexpr, OH: tl.constexpr, OW: tl.constexpr,\n                       KH: tl.constexpr, KW: tl.constexpr,\n                       NUM_MT: tl.constexpr, KSTEPS: tl.constexpr, EVEN_K: tl.constexpr,\n                       BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):\n    pid_m = tl.program_id(0)\n    n = n0 + tl.program_id(1)\n    pid_n = tl.program_id(2)\n\n    OHW: tl.constexpr = OH * OW\n    KTOT: tl.constexpr = KH * KW * CI\n    KITERS: tl.constexpr = KH * KW * KSTEPS\n\n    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)\n    m_ok = offs_m < OHW\n    m_c = tl.minimum(offs_m, OHW - 1)\n    oh = m_c // OW\n    ow = m_c - oh * OW\n    pix = (oh * W + ow) * CI                       # NHWC offset of the top-left tap\n\n    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)\n    n_ok = offs_n < CO\n    offs_nc = tl.minimum(offs_n, CO - 1)\n    offs_k = tl.arange(0, BLOCK_K)\n\n    x_img = xt_ptr + n.to(tl.int64) * (H * W * CI)\n    a_base = x_img + pix[:, None] + offs_k[None, :]            # [BM, BK], k contiguous\n    b_base = wk_ptr + offs_nc[None, :] * KTOT + offs_k[:, None]  # [BK, BN], k contiguous\n\n    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)\n    for kk in range(0, KITERS):\n        tap = kk // KSTEPS\n        c0 = (kk - tap * KSTEPS) * BLOCK_K\n        kh = tap // KW\n        kw = tap - kh * KW\n        a_off = (kh * W + kw) * CI + c0\n        b_off = tap * CI + c0\n        if EVEN_K:\n            a = tl.load(a_base + a_off)\n            b = tl.load(b_base + b_off)\n        else:\n            kmask = (c0 + offs_k) < CI\n            a = tl.load(a_base + a_off, mask=kmask[None, :], other=0.0)\n            b = tl.load(b_base + b_off, mask=kmask[:, None], other=0.0)\n        acc = tl.dot(a, b, acc, input_precision="tf32x3")\n\n    # ---- epilogue: per-tile statistics (sum and centred M2) ----\n    mf = m_ok[:, None]\n    accz = tl.where(mf, acc, 0.0)\n    s = tl.sum(accz, axis=0)                                   # [BN]\n    cnt = tl.minimum(OHW - pid_m * BLOCK_M, BLOCK_M).to(tl.float32)\n    tmean = s / cnt\n    d = tl.where(mf, acc - tmean[None, :], 0.0)\n    m2 = tl.sum(d * d, axis=0)\n    p_off = (n.to(tl.int64) * CO + offs_n) * NUM_MT + pid_m\n    tl.store(ps_ptr + p_off, s, mask=n_ok)\n    tl.store(pm2_ptr + p_off, m2, mask=n_ok)\n\n    # ---- store the raw conv output (bias omitted: it cancels in InstanceNorm) ----\n    y_img = y_ptr + n.to(tl.int64) * (CO * OHW)\n    y_ptrs = y_img + offs_n[None, :] * OHW + offs_m[:, None]\n    tl.store(y_ptrs, acc, mask=mf & n_ok[None, :])\n\n\n@triton.jit\ndef _instnorm_kernel(y_ptr, ps_ptr, pm2_ptr, row0, eps, div,\n                     OHW: tl.constexpr, NUM_MT: tl.constexpr, TILE_M: tl.constexpr,\n                     P_BLOCK: tl.constexpr, BLOCK_E: tl.constexpr):\n    row = row0 + tl.program_id(0)                  # row = n * CO + c\n    t = tl.arange(0, P_BLOCK)\n    tm = t < NUM_MT\n    pbase = row.to(tl.int64) * NUM_MT\n    s = tl.load(ps_ptr + pbase + t, mask=tm, other=0.0).to(tl.float64)\n    m2 = tl.load(pm2_ptr + pbase + t, mask=tm, other=0.0).to(tl.float64)\n    cnt_i = tl.minimum(OHW - t * TILE_M, TILE_M)\n    cnt = tl.where(tm, cnt_i, 0).to(tl.float64)\n\n    mean = tl.sum(s, axis=0) / OHW\n    tmean = s / tl.maximum(cnt, 1.0)\n    dlt = tl.where(tm, tmean - mean, 0.0)\n    M2 = tl.sum(m2, axis=0) + tl.sum(cnt * dlt * dlt, axis=0)\n    var = M2 / OHW\n    rstd = 1.0 / tl.sqrt(var + eps)\n    scale = (rstd / div).to(tl.float32)\n    mean32 = mean.to(tl.float32)\n\n    base = y_ptr + row.to(tl.int64) * OHW\n    for start in range(0, OHW, BLOCK_E):\n        offs = start + tl.arange(0, BLOCK_E)\n        msk = offs < OHW\n        v = tl.load(base + offs, mask=msk, other=0.0)\n        tl.store(base + offs, (v - mean32) * scale, mask=msk)\n\n\n# ---------------------------------------------------------------------------\n# Module\n# ---------------------------------------------------------------------------\nclass ModelNew(nn.Module):\n    def __init__(self, in_channels, out_channels, kernel_size, divide_by):\n        super().__init__()\n        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size)\n        self.instance_norm = nn.InstanceNorm2d(out_channels)\n        self.divide_by = divide_by\n\n    def forward(self, x):\n        x = x.contiguous()\n        if x.dtype != torch.float32:\n            x = x.float()\n        w = self.conv.weight\n        if w.dtype != torch.float32:\n            w = w.float()\n        w = w.contiguous()\n\n        N, CI, H, W = x.shape\n        CO, _, KH, KW = w.shape\n        OH = H - KH + 1\n        OW = W - KW + 1\n        y = torch.empty((N, CO, OH, OW), device=x.device, dtype=torch.float32)\n        if N == 0 or CO == 0 or OH <= 0 or OW <= 0:\n            return y\n        OHW = OH * OW\n        HW = H * W\n        KK = KH * KW\n        KTOT = KK * CI\n\n        # weights -> [CO, KK, CI]\n        wk = torch.empty((CO * KTOT,), device=x.device, dtype=torch.float32)\n        total_w = CO * KTOT\n        _pack_weight_kernel[(triton.cdiv(total_w, 1024),)](\n            w, wk, total_w, CI=CI, KK=KK, BLOCK=1024, num_warps=4)\n\n        xt = torch.empty((N * HW * CI,), device=x.device, dtype=torch.float32)\n\n        bm = BLOCK_M\n        bn = min(BLOCK_N, max(16, triton.next_power_of_2(CO)))\n        bk = min(BLOCK_K, max(16, triton.next_power_of_2(CI)))\n        even_k = (CI % bk) == 0\n        ksteps = triton.cdiv(CI, bk)\n        num_mt = triton.cdiv(OHW, bm)\n        p_block = max(2, triton.next_power_of_2(num_mt))\n        bc = min(64, max(2, triton.next_power_of_2(CI)))\n\n        ps = torch.empty((N * CO * num_mt,), device=x.device, dtype=torch.float32)\n        pm2 = torch.empty((N * CO * num_mt,), device=x.device, dtype=torch.float32)\n\n        eps = float(self.instance_norm.eps)\n        div = float(self.divide_by)\n        chunk = max(1, min(IMG_CHUNK, N, 65535))\n\n        for n0 in range(0, N, chunk):\n            cnt = min(chunk, N - n0)\n            _nchw_to_nhwc_kernel[(triton.cdiv(HW, TP_BLOCK), cnt, triton.cdiv(CI, bc))](\n                x, xt, n0, CI=CI, HW=HW, BLOCK_P=TP_BLOCK, BLOCK_C=bc, num_warps=4)\n            _conv_stats_kernel[(num_mt, cnt, triton.cdiv(CO, bn))](\n                xt, wk, y, ps, pm2, n0,\n                CI=CI, H=H, W=W, CO=CO, OH=OH, OW=OW, KH=KH, KW=KW,\n                NUM_MT=num_mt, KSTEPS=ksteps, EVEN_K=even_k,\n                BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bk,\n                num_warps=NUM_WARPS, num_stages=NUM_STAGES)\n            _instnorm_kernel[(cnt * CO,)](\n                y, ps, pm2, n0 * CO, eps, div,\n                OHW=OHW, NUM_MT=num_mt, TILE_M=bm, P_BLOCK=p_block,\n                BLOCK_E=NORM_BLOCK, num_warps=NORM_WARPS)\n        return y\n',
}

# (pattern, node) per shape case a kernel won, in case order; None in a pattern matches any size or value.
_DISPATCH = [
    ((((128, 64, 128, 128), 'torch.float32'),), 45),
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
