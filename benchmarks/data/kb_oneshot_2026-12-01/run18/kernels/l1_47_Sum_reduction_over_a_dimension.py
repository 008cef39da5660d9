import math
import torch
import torch.nn as nn
import triton
import triton.language as tl

# ---------------------------------------------------------------------------
# Tunable launch parameters
# ---------------------------------------------------------------------------
BLOCK_R = 32          # rows of the reduced axis per loop step
BLOCK_I = 128         # contiguous inner columns per program
NUM_WARPS = 4
LAST_BLOCK = 4096     # chunk size when reducing the innermost (contiguous) dim
LAST_WARPS = 8

TUNABLES = {
    "BLOCK_R": [8, 16, 32, 64],
    "BLOCK_I": [64, 128, 256],
    "NUM_WARPS": [2, 4, 8],
    "LAST_BLOCK": [1024, 2048, 4096],
    "LAST_WARPS": [4, 8],
}


@triton.jit
def _sum_mid_kernel(
    x_ptr, y_ptr, R, I, stride_o, n_i_tiles,
    BLOCK_R: tl.constexpr, BLOCK_I: tl.constexpr,
):
    pid = tl.program_id(0)
    pid_o = pid // n_i_tiles
    pid_i = pid % n_i_tiles
    offs_r = tl.arange(0, BLOCK_R)
    offs_i = pid_i * BLOCK_I + tl.arange(0, BLOCK_I)
    i_mask = offs_i < I
    ptrs = x_ptr + pid_o.to(tl.int64) * stride_o + offs_r[:, None] * I + offs_i[None, :]
    acc = tl.zeros((BLOCK_R, BLOCK_I), dtype=tl.float32)
    for r0 in range(0, R, BLOCK_R):
        mask = ((r0 + offs_r)[:, None] < R) & i_mask[None, :]
        acc += tl.load(ptrs, mask=mask, other=0.0)
        ptrs += BLOCK_R * I
    out = tl.sum(acc, axis=0)
    tl.store(y_ptr + pid_o.to(tl.int64) * I + offs_i, out, mask=i_mask)


@triton.jit
def _sum_last_kernel(x_ptr, y_ptr, R, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    offs = tl.arange(0, BLOCK)
    base = x_ptr + row * R
    acc = tl.zeros((BLOCK,), dtype=tl.float32)
    for r0 in range(0, R, BLOCK):
        idx = r0 + offs
        acc += tl.load(base + idx, mask=idx < R, other=0.0)
    tl.store(y_ptr + row, tl.sum(acc, axis=0))


def _triton_sum_keepdim(x: torch.Tensor, dim: int) -> torch.Tensor:
    nd = x.dim()
    dim = dim % nd
    xc = x if x.is_contiguous() else x.contiguous()
    shape = list(xc.shape)
    outer = math.prod(shape[:dim])
    R = shape[dim]
    inner = math.prod(shape[dim + 1:])
    out_shape = list(shape)
    out_shape[dim] = 1
    y = torch.empty(out_shape, device=xc.device, dtype=xc.dtype)
    if y.numel() == 0:
        return y
    if inner == 1:
        blk = min(LAST_BLOCK, triton.next_power_of_2(max(R, 1)))
        _sum_last_kernel[(outer,)](xc, y, R, BLOCK=blk, num_warps=LAST_WARPS)
    else:
        bi = min(BLOCK_I, triton.next_power_of_2(inner))
        n_i_tiles = triton.cdiv(inner, bi)
        grid = (outer * n_i_tiles,)
        _sum_mid_kernel[grid](
            xc, y, R, inner, R * inner, n_i_tiles,
            BLOCK_R=BLOCK_R, BLOCK_I=bi,
            num_warps=NUM_WARPS,
        )
    return y


class ModelNew(nn.Module):
    """
    Sum reduction over `dim` (keepdim=True) with a Triton streaming reduction.
    """
    def __init__(self, dim: int):
        super(ModelNew, self).__init__()
        self.dim = dim

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return _triton_sum_keepdim(x, self.dim)
