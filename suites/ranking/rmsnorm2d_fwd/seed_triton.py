"""Triton seed for rmsnorm2d_fwd: one read of x, one write of y.

Technique: one program per BLOCK_ROWS rows, each a whole row (BLOCK_N = next power of two >= COLS, padding masked):
the tile is loaded once into registers, sum(x^2) reduced per row in fp32, and y = x * rstd * w stored. Narrow
rows are batched (BLOCK_ROWS = TILE // BLOCK_N) so a program moves a few KB with wide vector loads; wide rows get
more warps so the row still fits in registers. PyTorch's expression runs four kernels (pow, mean, rsqrt-add,
two multiplies) with [ROWS, COLS] temporaries.

Expected bottleneck: memory bandwidth (8 bytes per element); launch overhead only at small sizes.
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl

EPS = 1e-6

# Launch parameters; a tuner re-binds these module constants (values from TUNABLES).
TILE = 4096  # elements per program: BLOCK_ROWS = max(1, TILE // BLOCK_N)
NUM_WARPS = 4  # at least; rows wider than 512 * NUM_WARPS elements get more (up to 16)

TUNABLES = {
    "TILE": [1024, 2048, 4096, 8192, 16384],
    "NUM_WARPS": [1, 2, 4, 8, 16],
}

_INTERPRETER_TILE = 1 << 20  # Triton's interpreter (CPU): few, large programs


@triton.jit
def _rmsnorm_fwd_kernel(x_ptr, w_ptr, y_ptr, n_rows, n_cols, eps, BLOCK_ROWS: tl.constexpr, BLOCK_N: tl.constexpr):
    rows = tl.program_id(0) * BLOCK_ROWS + tl.arange(0, BLOCK_ROWS)
    cols = tl.arange(0, BLOCK_N)
    col_ok = cols < n_cols
    mask = (rows < n_rows)[:, None] & col_ok[None, :]
    offs = rows.to(tl.int64)[:, None] * n_cols + cols[None, :]
    x = tl.load(x_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    rstd = 1.0 / tl.sqrt(tl.sum(x * x, axis=1) / n_cols + eps)
    w = tl.load(w_ptr + cols, mask=col_ok, other=0.0).to(tl.float32)
    tl.store(y_ptr + offs, (x * rstd[:, None] * w[None, :]).to(y_ptr.dtype.element_ty), mask=mask)


class ModelNew(nn.Module):
    def __init__(self, cols: int, eps: float = EPS):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.randn(cols))  # filled from the reference's state dict

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        n_rows, n_cols = x.shape
        y = torch.empty_like(x)
        if y.numel() == 0:
            return y
        block_n = triton.next_power_of_2(n_cols)
        tile = TILE if x.is_cuda else _INTERPRETER_TILE
        block_rows = max(1, min(tile // block_n, triton.next_power_of_2(n_rows)))
        _rmsnorm_fwd_kernel[(triton.cdiv(n_rows, block_rows),)](
            x,
            self.weight.detach().contiguous(),
            y,
            n_rows,
            n_cols,
            float(self.eps),
            BLOCK_ROWS=block_rows,
            BLOCK_N=block_n,
            num_warps=max(NUM_WARPS, min(16, block_n // 512)),
        )
        return y
