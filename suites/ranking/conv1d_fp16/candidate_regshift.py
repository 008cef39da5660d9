"""conv1d (fp16 and fp32) with the shifted taps formed in registers from aligned 16-byte loads.

Technique: out[b, co, l] = bias[co] + sum_{ci, k} w[co, ci, k] x[b, ci, l + k - 1] (KS = 3, PAD = 1), per
sequence tile as in the seed (seed_triton.py). The seed loads each shifted tap with pointers one element off
16-byte alignment, which cannot vectorise: per thread and tap 16 two-byte loads, which bind the seed by L1
throughput, not DRAM, at the production shape (B = 2048, CIN = COUT = 96, L = 200). Here every load is
an aligned vector: each thread holds runs of VEC = 8 consecutive positions (16 bytes in fp16), and a tile is
loaded at l0 (the centre tap) and at l0 - 8 and l0 + 8 (served from L1). A run of the tap x[l - 1] is the centre
run shifted by one, (p7, a0, ..., a6), where p7 is the last element of the run before it; the tap x[l + 1] is
(a1, ..., a7, n0). Both are built by splitting runs into elements and joining them back in the new order
(tl.reshape, tl.split, tl.join on the size-8 innermost axis, which the load layout keeps inside one thread:
register renaming, no data movement across threads). Zero padding comes from the masks of the l0 - 8 and l0 + 8
loads (per element; where LENGTH is a multiple of 8, as at every suite shape, a whole run is in or out and the
masked loads stay 16-byte vectors). Each tap then goes through a
tensor-core dot with its weight tile (reordered once per forward to [KS, COUT, CIN], K-major), accumulating in
fp32; bias in the epilogue and one vectorised, masked store. fp32 inputs use tf32x3 (fp32-accurate).

Scope: kernel size 3, padding 1, stride 1, no dilation, one group (asserted). Any LENGTH is computed correctly
(the masks are per element); where LENGTH is not a multiple of 8 the rows are not 16-byte aligned and the loads
do not vectorise.

Expected bottleneck: DRAM bandwidth (157 MB moved at the production shape, against 22.6 GFLOP) with the tensor
cores at 75% useful output rows (96 of 128) and 78% useful columns (200 of 256). The defaults below are the
fastest of a `benchmarks/case_sweep.py` sweep at the production shape. Not yet at the floor: the three x loads per
step go through registers to shared memory before each dot, with no asynchronous copy overlapping them (one
stage measured faster than two). Measurements: docs/benchmarks/ranking.md.
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
NUM_STAGES = 1

TUNABLES = {
    "BLOCK_CO": [64, 128],
    "BLOCK_CI": [16, 32, 64],
    "BLOCK_L": [64, 128, 256],
    "NUM_WARPS": [4, 8],
    "NUM_STAGES": [1, 2, 3],
}

# Triton's interpreter (CPU): fewer, larger programs.
_INTERPRETER_BLOCK_L = 1024
_INTERPRETER_BLOCK_CO = 256
_INTERPRETER_BLOCK_CI = 128


@triton.jit
def _split_runs(t, R: tl.constexpr, Q: tl.constexpr):
    """[R, Q * 8] -> the 8 elements of every run of 8, each [R, Q] (element i of run q is t[:, 8 q + i])."""
    e, o = tl.split(tl.reshape(t, [R, Q, 4, 2]))  # even, odd elements: [R, Q, 4]
    e0, e1 = tl.split(tl.reshape(e, [R, Q, 2, 2]))  # (0, 4), (2, 6)
    o0, o1 = tl.split(tl.reshape(o, [R, Q, 2, 2]))  # (1, 5), (3, 7)
    a0, a4 = tl.split(e0)
    a2, a6 = tl.split(e1)
    a1, a5 = tl.split(o0)
    a3, a7 = tl.split(o1)
    return a0, a1, a2, a3, a4, a5, a6, a7


@triton.jit
def _join_runs(s0, s1, s2, s3, s4, s5, s6, s7, R: tl.constexpr, Q: tl.constexpr):
    """The inverse of _split_runs: [R, Q] elements 0..7 of every run -> [R, Q * 8]."""
    even = tl.join(tl.join(s0, s4), tl.join(s2, s6))  # [R, Q, 2, 2] -> 0, 2, 4, 6 once flattened
    odd = tl.join(tl.join(s1, s5), tl.join(s3, s7))
    even = tl.reshape(even, [R, Q, 4])
    odd = tl.reshape(odd, [R, Q, 4])
    return tl.reshape(tl.join(even, odd), [R, Q * 8])


@triton.jit
def _conv1d_regshift_kernel(
    x_ptr,
    w_ptr,
    bias_ptr,
    out_ptr,
    CIN: tl.constexpr,
    COUT: tl.constexpr,
    LENGTH: tl.constexpr,
    BLOCK_CO: tl.constexpr,
    BLOCK_CI: tl.constexpr,
    BLOCK_L: tl.constexpr,
    NUM_STAGES: tl.constexpr,
    FP32_ACCURATE: tl.constexpr,
):
    N_CO: tl.constexpr = (COUT + BLOCK_CO - 1) // BLOCK_CO
    N_L: tl.constexpr = (LENGTH + BLOCK_L - 1) // BLOCK_L
    Q: tl.constexpr = BLOCK_L // 8
    EVEN_CI: tl.constexpr = CIN % BLOCK_CI == 0
    EVEN_CO: tl.constexpr = COUT % BLOCK_CO == 0

    # Output-channel blocks vary fastest (they share x tiles in L2), then length tiles, then sequences.
    pid = tl.program_id(0)
    co_blk = pid % N_CO
    rest = pid // N_CO
    l_blk = rest % N_L
    b = (rest // N_L).to(tl.int64)

    co = co_blk * BLOCK_CO + tl.arange(0, BLOCK_CO)
    co_ok = co < COUT
    pos = l_blk * BLOCK_L + tl.arange(0, BLOCK_L)
    pos_ok = pos < LENGTH
    prev_ok = (pos >= 8) & (pos - 8 < LENGTH)  # the run before (whole runs in or out where LENGTH % 8 == 0)
    next_ok = pos + 8 < LENGTH
    x_seq = x_ptr + b * (CIN * LENGTH)

    acc = tl.zeros([BLOCK_CO, BLOCK_L], dtype=tl.float32)
    for ci0 in tl.range(0, CIN, BLOCK_CI, num_stages=NUM_STAGES):
        ci = ci0 + tl.arange(0, BLOCK_CI)
        ci_ok = ci < CIN
        rows = x_seq + ci[:, None] * LENGTH
        if EVEN_CI:
            centre = tl.load(rows + pos[None, :], mask=pos_ok[None, :], other=0.0)
            before = tl.load(rows + (pos - 8)[None, :], mask=prev_ok[None, :], other=0.0)
            after = tl.load(rows + (pos + 8)[None, :], mask=next_ok[None, :], other=0.0)
        else:
            centre = tl.load(rows + pos[None, :], mask=ci_ok[:, None] & pos_ok[None, :], other=0.0)
            before = tl.load(rows + (pos - 8)[None, :], mask=ci_ok[:, None] & prev_ok[None, :], other=0.0)
            after = tl.load(rows + (pos + 8)[None, :], mask=ci_ok[:, None] & next_ok[None, :], other=0.0)
        a0, a1, a2, a3, a4, a5, a6, a7 = _split_runs(centre, BLOCK_CI, Q)
        _, _, _, _, _, _, _, p7 = _split_runs(before, BLOCK_CI, Q)
        n0, _, _, _, _, _, _, _ = _split_runs(after, BLOCK_CI, Q)
        left = _join_runs(p7, a0, a1, a2, a3, a4, a5, a6, BLOCK_CI, Q)  # x[l - 1]
        right = _join_runs(a1, a2, a3, a4, a5, a6, a7, n0, BLOCK_CI, Q)  # x[l + 1]

        w_tile = w_ptr + co[:, None] * CIN + ci[None, :]  # tap k at + k * COUT * CIN
        if EVEN_CI and EVEN_CO:
            w0 = tl.load(w_tile)
            w1 = tl.load(w_tile + COUT * CIN)
            w2 = tl.load(w_tile + 2 * COUT * CIN)
        else:
            w_ok = co_ok[:, None] & ci_ok[None, :]
            w0 = tl.load(w_tile, mask=w_ok, other=0.0)
            w1 = tl.load(w_tile + COUT * CIN, mask=w_ok, other=0.0)
            w2 = tl.load(w_tile + 2 * COUT * CIN, mask=w_ok, other=0.0)
        if FP32_ACCURATE:
            acc = tl.dot(w0, left, acc, input_precision="tf32x3")
            acc = tl.dot(w1, centre, acc, input_precision="tf32x3")
            acc = tl.dot(w2, right, acc, input_precision="tf32x3")
        else:
            acc = tl.dot(w0, left, acc)
            acc = tl.dot(w1, centre, acc)
            acc = tl.dot(w2, right, acc)

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
        conv = self.conv
        x = x.contiguous()
        batch, cin, length = x.shape
        cout, _, ks = conv.weight.shape
        layout = (ks, conv.padding[0], conv.stride[0], conv.dilation[0], conv.groups)
        assert layout == (3, 1, 1, 1, 1), f"this kernel computes kernel size 3, padding 1, stride 1: got {layout}"
        assert max(cin, cout) * length < 2**31, "offsets within one sequence are 32-bit"
        out = torch.empty((batch, cout, length), dtype=x.dtype, device=x.device)
        if out.numel() == 0:
            return out
        # [COUT, CIN, KS] -> [KS, COUT, CIN]: each tap's weight tile is a contiguous, K-major load.
        weight = conv.weight.detach().permute(2, 0, 1).contiguous()
        bias = conv.bias.detach().contiguous()
        block_co, block_ci, block_l = BLOCK_CO, BLOCK_CI, BLOCK_L
        assert block_l >= 8, "a length tile holds whole runs of 8 positions"
        if not x.is_cuda:
            block_co = max(block_co, min(_INTERPRETER_BLOCK_CO, triton.next_power_of_2(cout)))
            block_ci = max(block_ci, min(_INTERPRETER_BLOCK_CI, triton.next_power_of_2(cin)))
            block_l = max(block_l, min(_INTERPRETER_BLOCK_L, triton.next_power_of_2(length)))
        grid = (triton.cdiv(cout, block_co) * triton.cdiv(length, block_l) * batch,)
        _conv1d_regshift_kernel[grid](
            x,
            weight,
            bias,
            out,
            CIN=cin,
            COUT=cout,
            LENGTH=length,
            BLOCK_CO=block_co,
            BLOCK_CI=block_ci,
            BLOCK_L=block_l,
            NUM_STAGES=NUM_STAGES,
            FP32_ACCURATE=x.dtype == torch.float32,
            num_warps=NUM_WARPS,
        )
        return out
