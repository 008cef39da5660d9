"""Deliberately WRONG Triton candidate for examples/softmax (a negative control).

BUG: computes exp(x) / sum(exp(x)) without subtracting the row max first. That is the same
function mathematically and matches torch.softmax within 1e-7 on randn or uniform(-1, 1) inputs
(every x is small), but exp overflows to inf for x > ~88, so large-magnitude inputs
(e.g. randn * 100) give inf / inf = NaN rows: only a multi-distribution check catches it.
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl

BLOCK_ROWS = 1
NUM_WARPS = 8

# Interpreter-only (see _rows_per_program); not a GPU tunable.
_INTERPRETER_TILE_ELEMS = 1 << 20

TUNABLES = {
    "BLOCK_ROWS": [1, 2, 4, 8, 16],
    "NUM_WARPS": [4, 8, 16, 32],
}


@triton.jit
def _softmax_rows_kernel(
    x_ptr,
    y_ptr,
    n_rows,
    n_cols,
    x_row_stride,
    y_row_stride,
    BLOCK_ROWS: tl.constexpr,
    BLOCK_N: tl.constexpr,
):
    pid = tl.program_id(0)
    rows = pid * BLOCK_ROWS + tl.arange(0, BLOCK_ROWS)
    cols = tl.arange(0, BLOCK_N)
    row_ok = rows < n_rows
    col_ok = cols < n_cols
    safe_rows = tl.minimum(rows, n_rows - 1).to(tl.int64)
    x_offs = safe_rows[:, None] * x_row_stride + cols[None, :]
    x = tl.load(x_ptr + x_offs, mask=col_ok[None, :], other=-float("inf")).to(tl.float32)

    e = tl.exp(x)  # BUG: no row-max subtraction, overflows for large inputs
    denom = tl.sum(e, axis=1)
    y = e / denom[:, None]

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
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        n_rows, n_cols = x.shape
        y = torch.empty_like(x)
        block_n = triton.next_power_of_2(n_cols)
        block_rows = _rows_per_program(n_rows, block_n, x.is_cuda)
        grid = (triton.cdiv(n_rows, block_rows),)
        _softmax_rows_kernel[grid](
            x,
            y,
            n_rows,
            n_cols,
            x.stride(0),
            y.stride(0),
            BLOCK_ROWS=block_rows,
            BLOCK_N=block_n,
            num_warps=NUM_WARPS,
        )
        return y
