import math
import torch
import torch.nn as nn
import triton
import triton.language as tl

# ---------------------------------------------------------------------------
# Tunable launch parameters
# ---------------------------------------------------------------------------
BLOCK = 4096          # elements per scan chunk (innermost-dim path)
NUM_WARPS = 8
OUTER_BLOCK_I = 256   # inner columns per program (non-innermost-dim path)
OUTER_WARPS = 4

TUNABLES = {
    "BLOCK": [1024, 2048, 4096, 8192],
    "NUM_WARPS": [4, 8, 16],
    "OUTER_BLOCK_I": [128, 256, 512],
    "OUTER_WARPS": [2, 4, 8],
}


@triton.jit
def _cumsum_rows_kernel(
    x_ptr, y_ptr, L, stride_x, stride_y,
    BLOCK: tl.constexpr, EVEN: tl.constexpr,
):
    row = tl.program_id(0).to(tl.int64)
    xr = x_ptr + row * stride_x
    yr = y_ptr + row * stride_y
    offs = tl.arange(0, BLOCK)
    carry = tl.sum(tl.zeros((BLOCK,), dtype=tl.float32), axis=0)
    for start in range(0, L, BLOCK):
        cols = start + offs
        if EVEN:
            xv = tl.load(xr + cols)
        else:
            xv = tl.load(xr + cols, mask=cols < L, other=0.0)
        yv = tl.cumsum(xv, axis=0) + carry
        if EVEN:
            tl.store(yr + cols, yv)
        else:
            tl.store(yr + cols, yv, mask=cols < L)
        carry += tl.sum(xv, axis=0)


@triton.jit
def _cumsum_outer_kernel(
    x_ptr, y_ptr, L, I, stride_o, n_i_tiles,
    BLOCK_I: tl.constexpr,
):
    pid = tl.program_id(0)
    o = pid // n_i_tiles
    ti = pid % n_i_tiles
    offs = ti * BLOCK_I + tl.arange(0, BLOCK_I)
    mask = offs < I
    base = o.to(tl.int64) * stride_o
    xp = x_ptr + base + offs
    yp = y_ptr + base + offs
    acc = tl.zeros((BLOCK_I,), dtype=tl.float32)
    for l in range(0, L):
        acc += tl.load(xp, mask=mask, other=0.0)
        tl.store(yp, acc, mask=mask)
        xp += I
        yp += I


def _triton_cumsum(x: torch.Tensor, dim: int) -> torch.Tensor:
    nd = x.dim()
    dim = dim % nd
    xc = x if x.is_contiguous() else x.contiguous()
    y = torch.empty_like(xc)
    if xc.numel() == 0:
        return y
    shape = list(xc.shape)
    outer = math.prod(shape[:dim])
    L = shape[dim]
    inner = math.prod(shape[dim + 1:])
    if inner == 1:
        blk = min(BLOCK, triton.next_power_of_2(L))
        _cumsum_rows_kernel[(outer,)](
            xc, y, L, L, L,
            BLOCK=blk, EVEN=(L % blk == 0),
            num_warps=NUM_WARPS,
        )
    else:
        bi = min(OUTER_BLOCK_I, triton.next_power_of_2(inner))
        n_i_tiles = triton.cdiv(inner, bi)
        _cumsum_outer_kernel[(outer * n_i_tiles,)](
            xc, y, L, inner, L * inner, n_i_tiles,
            BLOCK_I=bi, num_warps=OUTER_WARPS,
        )
    return y


class ModelNew(nn.Module):
    """
    Cumulative sum along `dim` implemented with a chunked Triton block scan.
    """
    def __init__(self, dim):
        super(ModelNew, self).__init__()
        self.dim = dim

    def forward(self, x):
        return _triton_cumsum(x, self.dim)
