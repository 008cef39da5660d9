import torch
import torch.nn as nn
import triton
import triton.language as tl

# ---------------------------------------------------------------------------
# Launch parameters
# ---------------------------------------------------------------------------
STATS_BLOCK = 4096      # elements per (row, chunk) partial-statistics program
STATS_WARPS = 8
NORM_BLOCK = 2048       # columns per normalize program
NORM_WARPS = 16
NORM_ROWS = 4           # rows handled per normalize program (weight/bias loaded once)
COMBINE_BLOCK = 1024    # partials per iteration in the per-row combine kernel

TUNABLES = {
    "STATS_BLOCK": [2048, 4096, 8192],
    "STATS_WARPS": [4, 8, 16],
    "NORM_BLOCK": [2048, 4096, 8192],
    "NORM_WARPS": [4, 8, 16],
    "NORM_ROWS": [1, 2, 4, 8, 16],
}


# ---------------------------------------------------------------------------
# Pass 1: per-(row, chunk) partial statistics: chunk sum and chunk M2
# (sum of squared deviations from the chunk's own mean, computed from registers).
# Grid is chunk-major so the last programs to run touch the tail chunks of
# every row -> those stay in L2 for the (reversed) normalize pass.
# ---------------------------------------------------------------------------
@triton.jit
def _ln_partial_stats(x_ptr, psum_ptr, pm2_ptr, M, N, C, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    chunk = pid // M
    row = pid % M
    offs = chunk * BLOCK + tl.arange(0, BLOCK)
    mask = offs < N
    x = tl.load(x_ptr + row.to(tl.int64) * N + offs, mask=mask, other=0.0)
    cnt = tl.sum(mask.to(tl.float32), axis=0)
    s = tl.sum(x, axis=0)
    mu = s / cnt
    d = tl.where(mask, x - mu, 0.0)
    m2 = tl.sum(d * d, axis=0)
    tl.store(psum_ptr + row * C + chunk, s)
    tl.store(pm2_ptr + row * C + chunk, m2)


# ---------------------------------------------------------------------------
# Pass 2: combine the partials of one row in float64 (Chan's parallel formula):
#   mean = sum(s_i) / N
#   M2   = sum(m2_i + n_i * (s_i / n_i - mean)^2)
# ---------------------------------------------------------------------------
@triton.jit(do_not_specialize=["N", "C"])
def _ln_combine(psum_ptr, pm2_ptr, mean_ptr, rstd_ptr, N, C, eps,
                SBLOCK: tl.constexpr, BLOCK: tl.constexpr):
    r = tl.program_id(0)
    base = r * C
    Nf = N.to(tl.float64)

    acc = tl.zeros([BLOCK], dtype=tl.float64)
    for c0 in range(0, C, BLOCK):
        idx = c0 + tl.arange(0, BLOCK)
        m = idx < C
        s = tl.load(psum_ptr + base + idx, mask=m, other=0.0)
        acc += s.to(tl.float64)
    mean = tl.sum(acc, axis=0) / Nf

    acc2 = tl.zeros([BLOCK], dtype=tl.float64)
    for c0 in range(0, C, BLOCK):
        idx = c0 + tl.arange(0, BLOCK)
        m = idx < C
        s = tl.load(psum_ptr + base + idx, mask=m, other=0.0).to(tl.float64)
        q = tl.load(pm2_ptr + base + idx, mask=m, other=0.0).to(tl.float64)
        n = N - idx * SBLOCK
        n = tl.where(n > SBLOCK, SBLOCK, n)
        nf = tl.where(m, n.to(tl.float64), 1.0)
        dm = s / nf - mean
        acc2 += tl.where(m, q + nf * dm * dm, 0.0)
    var = tl.sum(acc2, axis=0) / Nf
    rstd = 1.0 / tl.sqrt(var + eps)
    tl.store(mean_ptr + r, mean.to(tl.float32))
    tl.store(rstd_ptr + r, rstd.to(tl.float32))


# ---------------------------------------------------------------------------
# Pass 3: y = (x - mean) * rstd * w + b.
# Each program owns one column chunk and ROWS rows: weight/bias are loaded once
# and reused across the rows. Programs walk the chunks in reverse of pass 1 so
# the L2-resident tail of x is consumed first.
# ---------------------------------------------------------------------------
@triton.jit
def _ln_normalize(x_ptr, w_ptr, b_ptr, y_ptr, mean_ptr, rstd_ptr, M, N, G,
                  BLOCK: tl.constexpr, ROWS: tl.constexpr):
    p = tl.num_programs(0) - 1 - tl.program_id(0)
    chunk = p // G
    rg = p % G
    offs = chunk * BLOCK + tl.arange(0, BLOCK)
    cmask = offs < N
    w = tl.load(w_ptr + offs, mask=cmask, other=0.0)
    b = tl.load(b_ptr + offs, mask=cmask, other=0.0)
    for i in range(ROWS):
        r = rg * ROWS + i
        rok = r < M
        rr = tl.minimum(r, M - 1)
        mean = tl.load(mean_ptr + rr)
        rstd = tl.load(rstd_ptr + rr)
        base = rr.to(tl.int64) * N
        m = cmask & rok
        x = tl.load(x_ptr + base + offs, mask=m, other=0.0)
        y = (x - mean) * rstd * w + b
        tl.store(y_ptr + base + offs, y, mask=m)


class ModelNew(nn.Module):
    def __init__(self, normalized_shape: tuple):
        super(ModelNew, self).__init__()
        # Kept so the parameters (ln.weight, ln.bias) match the reference; never called.
        self.ln = nn.LayerNorm(normalized_shape=normalized_shape)
        self._nshape = tuple(self.ln.normalized_shape)
        n = 1
        for s in self._nshape:
            n *= int(s)
        self._n = n
        self._eps = float(self.ln.eps)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        N = self._n
        out_shape = x.shape
        x = x.contiguous()
        lead = out_shape[: len(out_shape) - len(self._nshape)]
        M = 1
        for d in lead:
            M *= int(d)

        xf = x.view(M, N)
        w = self.ln.weight.contiguous().view(N)
        b = self.ln.bias.contiguous().view(N)
        dev = x.device

        y = torch.empty((M, N), dtype=x.dtype, device=dev)

        Cs = triton.cdiv(N, STATS_BLOCK)
        psum = torch.empty((M, Cs), dtype=torch.float32, device=dev)
        pm2 = torch.empty((M, Cs), dtype=torch.float32, device=dev)
        mean = torch.empty((M,), dtype=torch.float32, device=dev)
        rstd = torch.empty((M,), dtype=torch.float32, device=dev)

        _ln_partial_stats[(Cs * M,)](
            xf, psum, pm2, M, N, Cs,
            BLOCK=STATS_BLOCK, num_warps=STATS_WARPS,
        )
        _ln_combine[(M,)](
            psum, pm2, mean, rstd, N, Cs, self._eps,
            SBLOCK=STATS_BLOCK, BLOCK=COMBINE_BLOCK, num_warps=4,
        )
        Cn = triton.cdiv(N, NORM_BLOCK)
        G = triton.cdiv(M, NORM_ROWS)
        _ln_normalize[(Cn * G,)](
            xf, w, b, y, mean, rstd, M, N, G,
            BLOCK=NORM_BLOCK, ROWS=NORM_ROWS, num_warps=NORM_WARPS,
        )
        return y.view(out_shape)
