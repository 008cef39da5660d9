"""LayerNorm forward (Triton): one [BLOCK_ROWS, BLOCK_N] tile per program, the whole row in registers.

Statistics in fp32 with the two-pass formula on data already in registers: mean first, then the
mean of squared deviations (never E[x^2] - E[x]^2, which cancels catastrophically for large |x|).
Padding columns are loaded as 0 and excluded from the deviations, and both sums are divided by the
true width. One read of x, weight and bias, one write of y.
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl

EPS = 1e-5

BLOCK_ROWS = 1
NUM_WARPS = 8

TUNABLES = {
    "BLOCK_ROWS": [1, 2, 4, 8],
    "NUM_WARPS": [2, 4, 8, 16],
}

_INTERPRETER_TILE_ELEMS = 1 << 18  # CPU interpreter only: many rows per program


@triton.jit
def _layernorm_fwd_kernel(
    x_ptr,
    w_ptr,
    b_ptr,
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
    row_ok = rows < n_rows
    col_ok = cols < n_cols
    mask = row_ok[:, None] & col_ok[None, :]
    rows64 = rows.to(tl.int64)

    x = tl.load(x_ptr + rows64[:, None] * x_row_stride + cols[None, :], mask=mask, other=0.0).to(tl.float32)
    mean = tl.sum(x, axis=1) / n_cols
    xc = tl.where(mask, x - mean[:, None], 0.0)  # padding must not add (0 - mean)^2 to the variance
    var = tl.sum(xc * xc, axis=1) / n_cols
    rstd = 1.0 / tl.sqrt(var + eps)

    w = tl.load(w_ptr + cols, mask=col_ok, other=0.0).to(tl.float32)
    b = tl.load(b_ptr + cols, mask=col_ok, other=0.0).to(tl.float32)
    y = xc * rstd[:, None] * w[None, :] + b[None, :]
    tl.store(y_ptr + rows64[:, None] * y_row_stride + cols[None, :], y.to(y_ptr.dtype.element_ty), mask=mask)


class ModelNew(nn.Module):
    def __init__(self, hidden: int, eps: float = EPS):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.randn(hidden))
        self.bias = nn.Parameter(torch.randn(hidden))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        n_rows, n_cols = x.shape
        y = torch.empty_like(x)
        if n_rows == 0 or n_cols == 0:
            return y
        block_n = triton.next_power_of_2(n_cols)  # the whole row in one tile (fine up to ~16K columns)
        if x.is_cuda:
            block_rows = BLOCK_ROWS
        else:
            block_rows = max(1, min(triton.next_power_of_2(n_rows), _INTERPRETER_TILE_ELEMS // block_n))
        grid = (triton.cdiv(n_rows, block_rows),)
        _layernorm_fwd_kernel[grid](
            x,
            self.weight.detach().contiguous(),
            self.bias.detach().contiguous(),
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
