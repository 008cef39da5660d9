"""Triton seed for wukong_fm: both GEMMs fused, X^T Y kept on chip.

Technique: program (j, b) owns output columns [j * BLOCK_K, (j + 1) * BLOCK_K) of batch element b. It computes
its slice of T = X^T Y, a [D, BLOCK_K] tile, with tensor-core dots over N (fp32 accumulation), rounds it to
fp16 in registers (the rounding the reference's intermediate tensor gets), and multiplies X by it for its
[N, BLOCK_K] output tile. T never touches memory: Y is read once, the output written once, X (N x D, small) read
twice per program from L2. PyTorch's two bmm calls also write and re-read the [B, D, K] intermediate, about as
large as Y when D ~ N: the fusion halves the traffic. Programs of one batch element run next to each other
(column blocks vary fastest), so X[b] stays in L2 between them.

Expected bottleneck: memory bandwidth (Y in, out out: ~4 bytes per element of Y at fp16) at the paper's shapes;
the arithmetic intensity, 2 * D flops per byte, is below an H100/H200's ridge point for D <= 128.
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl

# Launch parameters; a tuner re-binds these module constants (values from TUNABLES).
BLOCK_K = 128
MAX_BLOCK_N = 64
NUM_WARPS = 4
NUM_STAGES = 2

TUNABLES = {
    "BLOCK_K": [32, 64, 128, 256],
    "MAX_BLOCK_N": [16, 32, 64, 128],
    "NUM_WARPS": [2, 4, 8],
    "NUM_STAGES": [1, 2, 3, 4],
}


@triton.jit
def _wukong_fm_kernel(
    x_ptr,
    y_ptr,
    out_ptr,
    n,
    d,
    k,
    sxb,
    sxn,
    syb,
    syn,
    sob,
    son,
    BLOCK_N: tl.constexpr,
    BLOCK_D: tl.constexpr,
    BLOCK_K: tl.constexpr,
):
    b = tl.program_id(1).to(tl.int64)
    cols = tl.program_id(0) * BLOCK_K + tl.arange(0, BLOCK_K)
    col_ok = cols < k
    dims = tl.arange(0, BLOCK_D)
    dim_ok = dims < d
    x_base = x_ptr + b * sxb
    y_base = y_ptr + b * syb
    out_base = out_ptr + b * sob

    # T[:, cols] = X^T @ Y[:, cols], accumulated in fp32 over N.
    t = tl.zeros([BLOCK_D, BLOCK_K], dtype=tl.float32)
    for n0 in range(0, n, BLOCK_N):
        rows = n0 + tl.arange(0, BLOCK_N)
        row_ok = rows < n
        x = tl.load(x_base + rows[:, None] * sxn + dims[None, :], mask=row_ok[:, None] & dim_ok[None, :], other=0.0)
        y = tl.load(y_base + rows[:, None] * syn + cols[None, :], mask=row_ok[:, None] & col_ok[None, :], other=0.0)
        t += tl.dot(tl.trans(x), y)
    t_half = t.to(x_ptr.dtype.element_ty)

    # out[:, cols] = X @ T[:, cols].
    for n0 in range(0, n, BLOCK_N):
        rows = n0 + tl.arange(0, BLOCK_N)
        row_ok = rows < n
        x = tl.load(x_base + rows[:, None] * sxn + dims[None, :], mask=row_ok[:, None] & dim_ok[None, :], other=0.0)
        o = tl.dot(x, t_half)
        tl.store(
            out_base + rows[:, None] * son + cols[None, :],
            o.to(out_ptr.dtype.element_ty),
            mask=row_ok[:, None] & col_ok[None, :],
        )


class ModelNew(nn.Module):
    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        x, y = x.contiguous(), y.contiguous()
        batch, n, d = x.shape
        k = y.shape[2]
        out = torch.empty((batch, n, k), dtype=x.dtype, device=x.device)
        if out.numel() == 0:
            return out
        block_n = max(16, min(triton.next_power_of_2(n), MAX_BLOCK_N))
        block_d = max(16, triton.next_power_of_2(d))
        block_k = max(16, min(BLOCK_K, triton.next_power_of_2(k)))
        grid = (triton.cdiv(k, block_k), batch)
        _wukong_fm_kernel[grid](
            x,
            y,
            out,
            n,
            d,
            k,
            x.stride(0),
            x.stride(1),
            y.stride(0),
            y.stride(1),
            out.stride(0),
            out.stride(1),
            BLOCK_N=block_n,
            BLOCK_D=block_d,
            BLOCK_K=block_k,
            num_warps=NUM_WARPS,
            num_stages=NUM_STAGES,
        )
        return out
