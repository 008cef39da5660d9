"""RMSNorm forward (Triton), float16 in and out, float32 inside.

Each program normalises BLOCK_ROWS rows held whole in registers ([BLOCK_ROWS, BLOCK_N] tile, BLOCK_N the
next power of two >= HIDDEN). Loads are upcast to fp32 before squaring (fp16 x*x overflows for |x| > 256),
the mean divides by the true width, and the result is cast back to the output's dtype at the store.
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl

EPS = 1e-6

BLOCK_ROWS = 1
NUM_WARPS = 8

TUNABLES = {
    "BLOCK_ROWS": [1, 2, 4, 8],
    "NUM_WARPS": [2, 4, 8, 16],
}

_INTERPRETER_TILE_ELEMS = 1 << 18  # CPU interpreter only: many rows per program


@triton.jit
def _rmsnorm_fwd_kernel(
    x_ptr,
    w_ptr,
    y_ptr,
    n_rows,
    n_cols,
    x_row_stride,
    y_row_stride,
    eps,
    BLOCK_ROWS: tl.constexpr,
    BLOCK_N: tl.constexpr,
):
    pid = tl.program_id(0)
    rows = pid * BLOCK_ROWS + tl.arange(0, BLOCK_ROWS)
    cols = tl.arange(0, BLOCK_N)
    col_ok = cols < n_cols
    mask = (rows < n_rows)[:, None] & col_ok[None, :]
    rows64 = rows.to(tl.int64)

    x = tl.load(x_ptr + rows64[:, None] * x_row_stride + cols[None, :], mask=mask, other=0.0).to(tl.float32)
    rstd = 1.0 / tl.sqrt(tl.sum(x * x, axis=1) / n_cols + eps)
    w = tl.load(w_ptr + cols, mask=col_ok, other=0.0).to(tl.float32)
    y = x * rstd[:, None] * w[None, :]
    tl.store(y_ptr + rows64[:, None] * y_row_stride + cols[None, :], y.to(y_ptr.dtype.element_ty), mask=mask)


class ModelNew(nn.Module):
    def __init__(self, hidden: int, eps: float = EPS):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.randn(hidden))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        n_rows, n_cols = x.shape
        y = torch.empty_like(x)
        if n_rows == 0 or n_cols == 0:
            return y
        block_n = triton.next_power_of_2(n_cols)
        if x.is_cuda:
            block_rows = BLOCK_ROWS
        else:
            block_rows = max(1, min(triton.next_power_of_2(n_rows), _INTERPRETER_TILE_ELEMS // block_n))
        grid = (triton.cdiv(n_rows, block_rows),)
        _rmsnorm_fwd_kernel[grid](
            x,
            self.weight.detach().contiguous(),
            y,
            n_rows,
            n_cols,
            x.stride(0),
            y.stride(0),
            float(self.eps),
            BLOCK_ROWS=block_rows,
            BLOCK_N=block_n,
            num_warps=NUM_WARPS,
        )
        return y
