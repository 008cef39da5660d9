"""Triton seed for rmsnorm2d_bwd: dx in one pass over x and dy, dw by a deterministic two-level reduction.

Technique: each program walks ROWS_PER_PROGRAM rows, BLOCK_ROWS at a time (whole rows in registers, padding
masked). Per row it recomputes rstd, forms xhat and w * dy, reduces their dot product, and stores
dx = (w dy - xhat mean(w dy xhat)) rstd: x and dy are read once, dx written once. The dw contributions dy * xhat
accumulate in a [BLOCK_ROWS, BLOCK_N] fp32 register tile across the program's rows and are written once per
program as one partial row; a second small kernel sums the partials column-wise in a fixed order (no atomics:
the result is deterministic). PyTorch's closed form runs about ten kernels with [ROWS, COLS] temporaries.

Expected bottleneck: memory bandwidth (12 bytes per element: x, dy in, dx out); the partials add
4 * COLS * ROWS / ROWS_PER_PROGRAM bytes, a few percent.
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl

EPS = 1e-6

# Launch parameters; a tuner re-binds these module constants (values from TUNABLES).
TILE = 2048  # elements per step: BLOCK_ROWS = max(1, TILE // BLOCK_N)
STEPS = 8  # steps per program: ROWS_PER_PROGRAM = STEPS * BLOCK_ROWS
NUM_WARPS = 4  # at least; rows wider than 512 * NUM_WARPS elements get more (up to 16)
REDUCE_ROWS = 32  # partial rows summed per step of the dw reduction

TUNABLES = {
    "TILE": [512, 1024, 2048, 4096, 8192],
    "STEPS": [1, 2, 4, 8, 16, 32],
    "NUM_WARPS": [1, 2, 4, 8, 16],
    "REDUCE_ROWS": [8, 16, 32, 64],
}

_INTERPRETER_TILE = 1 << 18  # Triton's interpreter (CPU): few, large programs


@triton.jit
def _rmsnorm_bwd_kernel(
    x_ptr,
    w_ptr,
    dy_ptr,
    dx_ptr,
    part_ptr,
    n_rows,
    n_cols,
    eps,
    rows_per_program,
    BLOCK_ROWS: tl.constexpr,
    BLOCK_N: tl.constexpr,
):
    pid = tl.program_id(0)
    cols = tl.arange(0, BLOCK_N)
    col_ok = cols < n_cols
    w = tl.load(w_ptr + cols, mask=col_ok, other=0.0).to(tl.float32)
    dw = tl.zeros([BLOCK_ROWS, BLOCK_N], dtype=tl.float32)
    first = pid * rows_per_program
    for r0 in range(0, rows_per_program, BLOCK_ROWS):
        rows = first + r0 + tl.arange(0, BLOCK_ROWS)
        mask = (rows < n_rows)[:, None] & col_ok[None, :]
        offs = rows.to(tl.int64)[:, None] * n_cols + cols[None, :]
        x = tl.load(x_ptr + offs, mask=mask, other=0.0).to(tl.float32)
        dy = tl.load(dy_ptr + offs, mask=mask, other=0.0).to(tl.float32)
        rstd = 1.0 / tl.sqrt(tl.sum(x * x, axis=1) / n_cols + eps)
        xhat = x * rstd[:, None]
        wdy = w[None, :] * dy
        c = tl.sum(wdy * xhat, axis=1) / n_cols
        dx = (wdy - xhat * c[:, None]) * rstd[:, None]
        tl.store(dx_ptr + offs, dx.to(dx_ptr.dtype.element_ty), mask=mask)
        dw += dy * xhat  # rows past the end hold x = dy = 0: they add nothing
    tl.store(part_ptr + pid.to(tl.int64) * n_cols + cols, tl.sum(dw, axis=0), mask=col_ok)


@triton.jit
def _sum_partials_kernel(part_ptr, dw_ptr, n_parts, n_cols, BLOCK_P: tl.constexpr, BLOCK_C: tl.constexpr):
    cols = tl.program_id(0) * BLOCK_C + tl.arange(0, BLOCK_C)
    col_ok = cols < n_cols
    acc = tl.zeros([BLOCK_P, BLOCK_C], dtype=tl.float32)
    for p0 in range(0, n_parts, BLOCK_P):
        parts = p0 + tl.arange(0, BLOCK_P)
        mask = (parts < n_parts)[:, None] & col_ok[None, :]
        acc += tl.load(part_ptr + parts.to(tl.int64)[:, None] * n_cols + cols[None, :], mask=mask, other=0.0)
    tl.store(dw_ptr + cols, tl.sum(acc, axis=0).to(dw_ptr.dtype.element_ty), mask=col_ok)


class ModelNew(nn.Module):
    def __init__(self, eps: float = EPS):
        super().__init__()
        self.eps = eps

    def forward(self, x: torch.Tensor, w: torch.Tensor, dy: torch.Tensor):
        x, w, dy = x.contiguous(), w.contiguous(), dy.contiguous()
        n_rows, n_cols = x.shape
        dx = torch.empty_like(x)
        dw = torch.empty_like(w)
        if n_cols == 0:
            return dx, dw
        block_n = triton.next_power_of_2(n_cols)
        if x.is_cuda:
            block_rows = max(1, min(TILE // block_n, triton.next_power_of_2(max(n_rows, 1))))
            rows_per_program = block_rows * max(1, STEPS)
        else:
            block_rows = max(1, min(_INTERPRETER_TILE // block_n, triton.next_power_of_2(max(n_rows, 1))))
            rows_per_program = block_rows
        n_parts = max(1, triton.cdiv(n_rows, rows_per_program))
        partials = torch.empty((n_parts, n_cols), dtype=torch.float32, device=x.device)
        _rmsnorm_bwd_kernel[(n_parts,)](
            x,
            w,
            dy,
            dx,
            partials,
            n_rows,
            n_cols,
            float(self.eps),
            rows_per_program,
            BLOCK_ROWS=block_rows,
            BLOCK_N=block_n,
            num_warps=max(NUM_WARPS, min(16, block_n // 512)),
        )
        block_c = min(block_n, 256)
        _sum_partials_kernel[(triton.cdiv(n_cols, block_c),)](
            partials, dw, n_parts, n_cols, BLOCK_P=REDUCE_ROWS, BLOCK_C=block_c, num_warps=4
        )
        return dx, dw
