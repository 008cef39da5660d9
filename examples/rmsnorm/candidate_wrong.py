"""Deliberately WRONG Triton candidate for examples/rmsnorm (a negative control).

BUG: the mean of squares is computed as sum(z^2) / BLOCK_N, where BLOCK_N is the power-of-two
padded tile width, instead of / HIDDEN. The padding lanes are masked to 0, so the sum itself is
right and the result is exact whenever HIDDEN is a power of two (the primary 4096 case passes
on every input distribution), but every row is scaled by sqrt(BLOCK_N / HIDDEN) when it is not
(HIDDEN = 3000 -> x1.17, HIDDEN = 1536 -> x1.15): only a multi-shape check catches it.
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl

EPS = 1e-6

BLOCK_ROWS = 1
NUM_WARPS = 8

# Interpreter-only (see _rows_per_program); not a GPU tunable.
_INTERPRETER_TILE_ELEMS = 1 << 20

TUNABLES = {
    "BLOCK_ROWS": [1, 2, 4, 8, 16],
    "NUM_WARPS": [4, 8, 16, 32],
}


@triton.jit
def _add_rmsnorm_kernel(
    x_ptr,
    r_ptr,
    w_ptr,
    y_ptr,
    n_rows,
    n_cols,
    x_row_stride,
    r_row_stride,
    y_row_stride,
    eps,
    BLOCK_ROWS: tl.constexpr,
    BLOCK_N: tl.constexpr,
):
    pid = tl.program_id(0)
    rows = pid * BLOCK_ROWS + tl.arange(0, BLOCK_ROWS)
    cols = tl.arange(0, BLOCK_N)
    row_ok = rows < n_rows
    col_ok = cols < n_cols
    safe_rows = tl.minimum(rows, n_rows - 1).to(tl.int64)
    x = tl.load(x_ptr + safe_rows[:, None] * x_row_stride + cols[None, :], mask=col_ok[None, :], other=0.0)
    r = tl.load(r_ptr + safe_rows[:, None] * r_row_stride + cols[None, :], mask=col_ok[None, :], other=0.0)
    z = x.to(tl.float32) + r.to(tl.float32)

    mean_sq = tl.sum(z * z, axis=1) / BLOCK_N  # BUG: should divide by n_cols
    inv_rms = 1.0 / tl.sqrt(mean_sq + eps)
    w = tl.load(w_ptr + cols, mask=col_ok, other=0.0).to(tl.float32)
    y = z * inv_rms[:, None] * w[None, :]

    y_offs = rows.to(tl.int64)[:, None] * y_row_stride + cols[None, :]
    tl.store(y_ptr + y_offs, y, mask=row_ok[:, None] & col_ok[None, :])


def _rows_per_program(n_rows: int, block_n: int, on_gpu: bool) -> int:
    """Rows per program: BLOCK_ROWS on the GPU. On the CPU, Triton runs only in its interpreter
    (TRITON_INTERPRET=1), where every program costs milliseconds of Python overhead, so there
    each program takes as many rows as fit in a ~1M-element tile (same kernel, same results)."""
    if on_gpu:
        return BLOCK_ROWS
    return max(BLOCK_ROWS, min(triton.next_power_of_2(n_rows), _INTERPRETER_TILE_ELEMS // block_n))


class ModelNew(nn.Module):
    def __init__(self, hidden: int, eps: float = EPS):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.randn(hidden))

    def forward(self, x: torch.Tensor, residual: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        residual = residual.contiguous()
        weight = self.weight.detach().contiguous()
        n_rows, n_cols = x.shape
        y = torch.empty_like(x)
        block_n = triton.next_power_of_2(n_cols)
        block_rows = _rows_per_program(n_rows, block_n, x.is_cuda)
        grid = (triton.cdiv(n_rows, block_rows),)
        _add_rmsnorm_kernel[grid](
            x,
            residual,
            weight,
            y,
            n_rows,
            n_cols,
            x.stride(0),
            residual.stride(0),
            y.stride(0),
            float(self.eps),
            BLOCK_ROWS=block_rows,
            BLOCK_N=block_n,
            num_warps=NUM_WARPS,
        )
        return y
