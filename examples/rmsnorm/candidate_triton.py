"""Triton candidate for examples/rmsnorm: fused residual add + RMSNorm * weight.

Each program loads a [BLOCK_ROWS, BLOCK_N] tile of x and residual (BLOCK_N = next power of
two >= HIDDEN, padding masked to 0), forms z = x + residual, reduces sum(z^2) per row in fp32,
and writes z * rsqrt(mean + eps) * weight: one read of each input and one write. Runs on CUDA
and on the CPU in Triton's interpreter (TRITON_INTERPRET=1).
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl

EPS = 1e-6

# Launch parameters; a tuner may re-bind these module constants (values from TUNABLES).
# Defaults: the fastest of the values tried at 4096x4096 fp32 on a GPU; more rows per program or
# 32 warps were slower there (measurements: docs/benchmarks/harness.md).
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
    # Out-of-range rows re-read the last row (in bounds); their results are never stored.
    safe_rows = tl.minimum(rows, n_rows - 1).to(tl.int64)
    x = tl.load(x_ptr + safe_rows[:, None] * x_row_stride + cols[None, :], mask=col_ok[None, :], other=0.0)
    r = tl.load(r_ptr + safe_rows[:, None] * r_row_stride + cols[None, :], mask=col_ok[None, :], other=0.0)
    z = x.to(tl.float32) + r.to(tl.float32)

    mean_sq = tl.sum(z * z, axis=1) / n_cols  # divide by the true width, not BLOCK_N
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
        # Same name/shape/init as the reference so the harness's state_dict copy lines up.
        self.weight = nn.Parameter(torch.randn(hidden))

    def forward(self, x: torch.Tensor, residual: torch.Tensor) -> torch.Tensor:
        assert x.dim() == 2 and residual.shape == x.shape, "expects two 2-D tensors of one shape"
        x = x.contiguous()
        residual = residual.contiguous()
        weight = self.weight.detach().contiguous()
        n_rows, n_cols = x.shape
        y = torch.empty_like(x)
        if n_rows == 0 or n_cols == 0:
            return y
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
