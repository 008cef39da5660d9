import torch
import torch.nn as nn
import triton
import triton.language as tl

# ---------------------------------------------------------------------------
# Tunable launch parameters
# ---------------------------------------------------------------------------
BLOCK_S = 256        # spatial positions per program
NUM_WARPS = 8
LOOP_BLOCK_C = 32    # feature chunk for the (large-C) looping fallback

TUNABLES = {
    "BLOCK_S": [64, 128, 256, 512],
    "NUM_WARPS": [4, 8, 16],
    "LOOP_BLOCK_C": [16, 32, 64],
}

_MAX_TILE = 32768    # max elements held in registers by one program (single-pass path)


@triton.jit
def _rmsnorm_tile_kernel(
    x_ptr, y_ptr, C, S, eps, stride_b, stride_c,
    BLOCK_C: tl.constexpr, BLOCK_S: tl.constexpr, EVEN: tl.constexpr,
):
    pid_s = tl.program_id(0)
    pid_b = tl.program_id(1)
    offs_c = tl.arange(0, BLOCK_C)
    offs_s = pid_s * BLOCK_S + tl.arange(0, BLOCK_S)
    base = pid_b.to(tl.int64) * stride_b
    offs = offs_c[:, None] * stride_c + offs_s[None, :]
    x_base = x_ptr + base
    y_base = y_ptr + base
    if EVEN:
        x = tl.load(x_base + offs)
    else:
        mask = (offs_c[:, None] < C) & (offs_s[None, :] < S)
        x = tl.load(x_base + offs, mask=mask, other=0.0)
    ss = tl.sum(x * x, axis=0)
    rms = tl.sqrt(ss / C + eps)
    y = x / rms[None, :]
    if EVEN:
        tl.store(y_base + offs, y)
    else:
        tl.store(y_base + offs, y, mask=mask)


@triton.jit
def _rmsnorm_loop_kernel(
    x_ptr, y_ptr, C, S, eps, stride_b, stride_c,
    BLOCK_C: tl.constexpr, BLOCK_S: tl.constexpr,
):
    pid_s = tl.program_id(0)
    pid_b = tl.program_id(1)
    offs_c = tl.arange(0, BLOCK_C)
    offs_s = pid_s * BLOCK_S + tl.arange(0, BLOCK_S)
    s_mask = offs_s < S
    base = pid_b.to(tl.int64) * stride_b
    x_base = x_ptr + base
    y_base = y_ptr + base
    acc = tl.zeros((BLOCK_C, BLOCK_S), dtype=tl.float32)
    for c0 in range(0, C, BLOCK_C):
        cc = c0 + offs_c
        mask = (cc[:, None] < C) & s_mask[None, :]
        ptrs = x_base + cc.to(tl.int64)[:, None] * stride_c + offs_s[None, :]
        xv = tl.load(ptrs, mask=mask, other=0.0)
        acc += xv * xv
    ss = tl.sum(acc, axis=0)
    rms = tl.sqrt(ss / C + eps)
    for c0 in range(0, C, BLOCK_C):
        cc = c0 + offs_c
        mask = (cc[:, None] < C) & s_mask[None, :]
        off = cc.to(tl.int64)[:, None] * stride_c + offs_s[None, :]
        xv = tl.load(x_base + off, mask=mask, other=0.0)
        tl.store(y_base + off, xv / rms[None, :], mask=mask)


def _triton_rmsnorm(x: torch.Tensor, eps: float) -> torch.Tensor:
    xc = x if x.is_contiguous() else x.contiguous()
    y = torch.empty_like(xc)
    if xc.numel() == 0:
        return y
    B = xc.shape[0]
    C = xc.shape[1]
    S = xc.numel() // (B * C)
    stride_b = C * S
    stride_c = S
    BC = triton.next_power_of_2(C)
    bs = min(BLOCK_S, triton.next_power_of_2(S))
    if BC <= 256:
        while BC * bs > _MAX_TILE and bs > 16:
            bs //= 2
        even = (BC == C) and (S % bs == 0)
        grid = (triton.cdiv(S, bs), B)
        _rmsnorm_tile_kernel[grid](
            xc, y, C, S, eps, stride_b, stride_c,
            BLOCK_C=BC, BLOCK_S=bs, EVEN=even,
            num_warps=NUM_WARPS,
        )
    else:
        bc = min(LOOP_BLOCK_C, BC)
        grid = (triton.cdiv(S, bs), B)
        _rmsnorm_loop_kernel[grid](
            xc, y, C, S, eps, stride_b, stride_c,
            BLOCK_C=bc, BLOCK_S=bs,
            num_warps=NUM_WARPS,
        )
    return y


class ModelNew(nn.Module):
    """
    RMS normalization over dim=1, fused into a single-pass Triton kernel.
    """
    def __init__(self, num_features: int, eps: float = 1e-5):
        super(ModelNew, self).__init__()
        self.num_features = num_features
        self.eps = eps

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return _triton_rmsnorm(x, float(self.eps))
