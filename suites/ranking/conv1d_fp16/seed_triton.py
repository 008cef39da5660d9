"""Triton seed for conv1d (fp16 and fp32): per-sequence tiles, contiguous x rows, tap-major weights.

Technique: out[b, co, l] = bias[co] + sum_{ci, k} w[co, ci, k] x[b, ci, l + k - PAD], computed per sequence.
Program (j, i, b) (flattened into a 1-D grid; output-channel blocks vary fastest, then length tiles, then the
batch) owns ONE sequence b and the contiguous positions l0 .. l0 + BLOCK_L: no per-element div/mod, x rows read
contiguously, masks only at the sequence's edges and tails. The weight is reordered once per forward on the host
to a contiguous [KS, COUT, CIN] tensor (a permute-copy of 96 x 96 x 3 elements), so each tap's [BLOCK_CO,
BLOCK_CI] tile is a row-contiguous (K-major) load. For each BLOCK_CI input channels and each tap k, the tap's
weight tile and the [BLOCK_CI, BLOCK_L] input tile shifted by k - PAD (zero padding by masks, no padded copy of
x) go through a tensor-core dot accumulating in place in fp32; the three shifted tiles cover the same lines and
are served from L1. The shape (CIN, COUT, L) is passed as constexpr: the compiler sees the row strides' true
divisibility (L = 200 is a multiple of 8, which Triton's integer specialisation by 16 misses), so the unshifted
tap's loads and the output stores vectorise to 16 bytes, trip counts are constant and the channel masks vanish
when the blocks divide the channels (one compile per shape). With BLOCK_CO >= COUT (128 >= 96) every x tile is
read from DRAM once and by one program. Bias added in the epilogue, one store in the output dtype. fp16 inputs use
fp16 tensor cores; fp32 inputs use tf32x3 (three TF32 products per fp32 product: fp32-accurate on tensor cores).

Expected bottleneck: at the production shape (B = 2048, CIN = COUT = 96, L = 200) load issue, then DRAM
bandwidth: the two shifted taps cannot be vectorised (their addresses are one element off 16-byte alignment), so
they are 2-byte loads out of L1; the tensor cores run at 75% useful rows (96 of 128 output channels) and 78%
useful columns (200 of 256 positions), which the compute floor absorbs (22.6 GFLOP against 157 MB moved). Tensor
cores at the out-of-distribution (64, 768, 768, 1024): 232 GFLOP over 205 MB. It replaced an implicit GEMM over
the flattened B x L axis, which paid a div/mod per position, gathered x across sequence boundaries and re-read
each x tile once per output-channel block. Measurements: docs/benchmarks/ranking.md.
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl

# Launch parameters; a tuner re-binds these module constants (values from TUNABLES).
BLOCK_CO = 128
BLOCK_CI = 32
BLOCK_L = 128
NUM_WARPS = 8
NUM_STAGES = 2

TUNABLES = {
    "BLOCK_CO": [32, 64, 128, 256],
    "BLOCK_CI": [16, 32, 64],
    "BLOCK_L": [32, 64, 128, 256],
    "NUM_WARPS": [4, 8],
    "NUM_STAGES": [1, 2, 3, 4],
}

# Triton's interpreter (CPU): fewer, larger programs (one per sequence for the small test shapes).
_INTERPRETER_BLOCK_L = 1024
_INTERPRETER_BLOCK_CO = 256
_INTERPRETER_BLOCK_CI = 128


@triton.jit
def _conv1d_seq_kernel(
    x_ptr,
    w_ptr,
    bias_ptr,
    out_ptr,
    CIN: tl.constexpr,
    COUT: tl.constexpr,
    LENGTH: tl.constexpr,
    KS: tl.constexpr,
    PAD: tl.constexpr,
    BLOCK_CO: tl.constexpr,
    BLOCK_CI: tl.constexpr,
    BLOCK_L: tl.constexpr,
    FP32_ACCURATE: tl.constexpr,
):
    N_CO: tl.constexpr = (COUT + BLOCK_CO - 1) // BLOCK_CO
    N_L: tl.constexpr = (LENGTH + BLOCK_L - 1) // BLOCK_L
    EVEN_CI: tl.constexpr = CIN % BLOCK_CI == 0
    EVEN_CO: tl.constexpr = COUT % BLOCK_CO == 0

    # Scalar decomposition of the program id (once per program): channel block, length tile, sequence.
    pid = tl.program_id(0)
    co_blk = pid % N_CO
    rest = pid // N_CO
    l_blk = rest % N_L
    b = (rest // N_L).to(tl.int64)

    co = co_blk * BLOCK_CO + tl.arange(0, BLOCK_CO)
    co_ok = co < COUT
    pos = l_blk * BLOCK_L + tl.arange(0, BLOCK_L)
    pos_ok = pos < LENGTH
    x_seq = x_ptr + b * (CIN * LENGTH)  # x[b]: 64-bit scalar base, 32-bit offsets within the sequence

    acc = tl.zeros([BLOCK_CO, BLOCK_L], dtype=tl.float32)
    for ci0 in range(0, CIN, BLOCK_CI):
        ci = ci0 + tl.arange(0, BLOCK_CI)
        ci_ok = ci < CIN
        for k in tl.static_range(KS):
            # Tap k of the reordered weight, w_t[k, co, ci]: contiguous along ci.
            w_ptrs = w_ptr + k * (COUT * CIN) + co[:, None] * CIN + ci[None, :]
            if EVEN_CI and EVEN_CO:
                w = tl.load(w_ptrs)
            else:
                w = tl.load(w_ptrs, mask=co_ok[:, None] & ci_ok[None, :], other=0.0)
            src = pos + (k - PAD)
            x_ok = src < LENGTH
            if k < PAD:
                x_ok = x_ok & (src >= 0)
            if not EVEN_CI:
                x_ok = ci_ok[:, None] & x_ok[None, :]
            else:
                x_ok = x_ok[None, :]
            x = tl.load(x_seq + ci[:, None] * LENGTH + src[None, :], mask=x_ok, other=0.0)
            if FP32_ACCURATE:
                acc = tl.dot(w, x, acc, input_precision="tf32x3")
            else:
                acc = tl.dot(w, x, acc)

    if EVEN_CO:
        bias = tl.load(bias_ptr + co)
    else:
        bias = tl.load(bias_ptr + co, mask=co_ok, other=0.0)
    acc += bias.to(tl.float32)[:, None]
    out_ptrs = out_ptr + b * (COUT * LENGTH) + co[:, None] * LENGTH + pos[None, :]
    tl.store(out_ptrs, acc.to(out_ptr.dtype.element_ty), mask=co_ok[:, None] & pos_ok[None, :])


class ModelNew(nn.Module):
    def __init__(self, cin: int, cout: int, kernel_size: int = 3, padding: int = 1):
        super().__init__()
        # Parameter holder only, named as in the reference so the harness's state_dict copy fills it.
        self.conv = nn.Conv1d(cin, cout, kernel_size, padding=padding)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        batch, cin, length = x.shape
        # [COUT, CIN, KS] -> [KS, COUT, CIN]: each tap's weight tile is a contiguous, K-major load.
        weight = self.conv.weight.detach().permute(2, 0, 1).contiguous()
        bias = self.conv.bias.detach().contiguous()
        ks, cout, _ = weight.shape
        pad = self.conv.padding[0]
        out_len = length + 2 * pad - ks + 1
        assert out_len == length, "this kernel computes 'same'-length convolutions (stride 1, 2 * padding = k - 1)"
        assert max(cin, cout) * length < 2**31, "offsets within one sequence are 32-bit"
        out = torch.empty((batch, cout, length), dtype=x.dtype, device=x.device)
        if out.numel() == 0:
            return out
        block_co, block_ci, block_l = BLOCK_CO, BLOCK_CI, BLOCK_L
        if not x.is_cuda:
            block_co = max(block_co, min(_INTERPRETER_BLOCK_CO, triton.next_power_of_2(cout)))
            block_ci = max(block_ci, min(_INTERPRETER_BLOCK_CI, triton.next_power_of_2(cin)))
            block_l = max(block_l, min(_INTERPRETER_BLOCK_L, triton.next_power_of_2(length)))
        grid = (triton.cdiv(cout, block_co) * triton.cdiv(length, block_l) * batch,)
        _conv1d_seq_kernel[grid](
            x,
            weight,
            bias,
            out,
            CIN=cin,
            COUT=cout,
            LENGTH=length,
            KS=ks,
            PAD=pad,
            BLOCK_CO=block_co,
            BLOCK_CI=block_ci,
            BLOCK_L=block_l,
            FP32_ACCURATE=x.dtype == torch.float32,
            num_warps=NUM_WARPS,
            num_stages=NUM_STAGES,
        )
        return out
