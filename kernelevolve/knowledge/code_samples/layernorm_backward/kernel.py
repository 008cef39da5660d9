"""LayerNorm backward (Triton): dx per row, dw and db by a deterministic two-stage reduction.

Stage 1 (persistent): G programs each loop over row blocks p, p+G, p+2G, ...; per block they recompute
mean and rstd from x (cheaper than storing them), write
    dx = rstd * (g - mean(g) - xhat * mean(g * xhat)),   g = dy * w,  xhat = (x - mean) * rstd,
and accumulate sum(dy * xhat) and sum(dy) over their rows in fp32 registers. Each program then writes one
row of partial sums: a [G, N] buffer per gradient, no atomics, so results are bitwise reproducible.
Stage 2 sums the G partial rows per column.
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl

EPS = 1e-5

BLOCK_ROWS = 1  # rows per loop iteration of a stage-1 program (GPU)
PROGRAMS_PER_SM = 2  # stage-1 grid = PROGRAMS_PER_SM * SM count (GPU)
BLOCK_P = 32  # stage 2: partial rows summed per step
BLOCK_C = 256  # stage 2: columns per program
NUM_WARPS = 8

TUNABLES = {
    "BLOCK_ROWS": [1, 2, 4],
    "PROGRAMS_PER_SM": [1, 2, 4, 8],
    "BLOCK_P": [16, 32, 64],
    "BLOCK_C": [64, 128, 256],
    "NUM_WARPS": [4, 8, 16],
}

_INTERPRETER_TILE_ELEMS = 1 << 16  # CPU interpreter only: many rows per step, few programs
_INTERPRETER_PROGRAMS = 4


@triton.jit
def _layernorm_bwd_rows_kernel(
    x_ptr,
    w_ptr,
    dy_ptr,
    dx_ptr,
    dw_part_ptr,
    db_part_ptr,
    n_rows,
    n_cols,
    row_stride,
    eps,
    BLOCK_ROWS: tl.constexpr,
    BLOCK_N: tl.constexpr,
):
    pid = tl.program_id(0)
    n_progs = tl.num_programs(0)
    cols = tl.arange(0, BLOCK_N)
    col_ok = cols < n_cols
    w = tl.load(w_ptr + cols, mask=col_ok, other=0.0).to(tl.float32)
    dw_acc = tl.zeros((BLOCK_N,), dtype=tl.float32)
    db_acc = tl.zeros((BLOCK_N,), dtype=tl.float32)
    n_blocks = tl.cdiv(n_rows, BLOCK_ROWS)
    for blk in range(pid, n_blocks, n_progs):
        rows = blk * BLOCK_ROWS + tl.arange(0, BLOCK_ROWS)
        mask = (rows < n_rows)[:, None] & col_ok[None, :]
        offs = rows.to(tl.int64)[:, None] * row_stride + cols[None, :]
        # Masked lanes load 0: they add nothing to any sum below.
        x = tl.load(x_ptr + offs, mask=mask, other=0.0).to(tl.float32)
        dy = tl.load(dy_ptr + offs, mask=mask, other=0.0).to(tl.float32)
        mean = tl.sum(x, axis=1) / n_cols
        xc = tl.where(mask, x - mean[:, None], 0.0)
        rstd = 1.0 / tl.sqrt(tl.sum(xc * xc, axis=1) / n_cols + eps)
        xhat = xc * rstd[:, None]
        g = dy * w[None, :]
        c1 = tl.sum(g * xhat, axis=1) / n_cols
        c2 = tl.sum(g, axis=1) / n_cols
        dx = (g - c2[:, None] - xhat * c1[:, None]) * rstd[:, None]
        tl.store(dx_ptr + offs, dx.to(dx_ptr.dtype.element_ty), mask=mask)
        dw_acc += tl.sum(dy * xhat, axis=0)
        db_acc += tl.sum(dy, axis=0)
    tl.store(dw_part_ptr + pid * n_cols + cols, dw_acc, mask=col_ok)
    tl.store(db_part_ptr + pid * n_cols + cols, db_acc, mask=col_ok)


@triton.jit
def _sum_partials_kernel(part_ptr, out_ptr, n_parts, n_cols, BLOCK_P: tl.constexpr, BLOCK_C: tl.constexpr):
    """out[c] = sum over p of part[p, c], for the BLOCK_C columns of this program."""
    cols = tl.program_id(0) * BLOCK_C + tl.arange(0, BLOCK_C)
    col_ok = cols < n_cols
    acc = tl.zeros((BLOCK_C,), dtype=tl.float32)
    for p0 in range(0, n_parts, BLOCK_P):
        p = p0 + tl.arange(0, BLOCK_P)
        mask = (p < n_parts)[:, None] & col_ok[None, :]
        acc += tl.sum(tl.load(part_ptr + p[:, None] * n_cols + cols[None, :], mask=mask, other=0.0), axis=0)
    tl.store(out_ptr + cols, acc.to(out_ptr.dtype.element_ty), mask=col_ok)


def _stage1_grid(n_blocks: int, device: torch.device) -> int:
    if device.type == "cuda":
        sms = torch.cuda.get_device_properties(device).multi_processor_count
        return max(1, min(n_blocks, PROGRAMS_PER_SM * sms))
    return max(1, min(n_blocks, _INTERPRETER_PROGRAMS))


class ModelNew(nn.Module):
    def __init__(self, eps: float = EPS):
        super().__init__()
        self.eps = eps

    def forward(self, x: torch.Tensor, w: torch.Tensor, dy: torch.Tensor):
        x = x.contiguous()
        dy = dy.contiguous()
        w = w.contiguous()
        n_rows, n_cols = x.shape
        dx = torch.empty_like(x)
        dw = torch.empty_like(w)
        db = torch.empty_like(w)
        block_n = triton.next_power_of_2(n_cols)
        if x.is_cuda:
            block_rows = BLOCK_ROWS
            block_c = BLOCK_C
        else:
            block_rows = max(1, min(triton.next_power_of_2(n_rows), _INTERPRETER_TILE_ELEMS // block_n))
            block_c = block_n
        g = _stage1_grid(triton.cdiv(n_rows, block_rows), x.device)
        # fp32 partials whatever the input dtype: the cross-row sums need the precision.
        dw_part = torch.empty((g, n_cols), dtype=torch.float32, device=x.device)
        db_part = torch.empty((g, n_cols), dtype=torch.float32, device=x.device)
        _layernorm_bwd_rows_kernel[(g,)](
            x,
            w,
            dy,
            dx,
            dw_part,
            db_part,
            n_rows,
            n_cols,
            x.stride(0),
            float(self.eps),
            BLOCK_ROWS=block_rows,
            BLOCK_N=block_n,
            num_warps=NUM_WARPS,
        )
        grid2 = (triton.cdiv(n_cols, block_c),)
        _sum_partials_kernel[grid2](dw_part, dw, g, n_cols, BLOCK_P=BLOCK_P, BLOCK_C=block_c)
        _sum_partials_kernel[grid2](db_part, db, g, n_cols, BLOCK_P=BLOCK_P, BLOCK_C=block_c)
        return dx, dw, db
