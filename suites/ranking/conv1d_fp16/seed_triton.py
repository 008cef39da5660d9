"""Triton seed for conv1d (fp16 and fp32): an implicit GEMM over the flattened batch x length axis.

Technique: out[b, co, l] = bias[co] + sum_{ci, k} w[co, ci, k] x[b, ci, l + k - PAD] is a GEMM with M = COUT,
N = B * L (every output position of every sequence, flattened so that short sequences (L = 200) do not leave
tiles half empty) and a reduction over CIN x KERNEL_SIZE. Program (i, j) computes a [BLOCK_CO, BLOCK_P] output
tile: for each BLOCK_CI input channels and each tap k, a [BLOCK_CO, BLOCK_CI] weight tile and the matching
[BLOCK_CI, BLOCK_P] input tile shifted by k - PAD (zero padding by masks, no padded copy of x) go through a
tensor-core dot with fp32 accumulation. The three shifted input tiles overlap and are served from L1. Output
channel blocks vary fastest over the grid, so the programs sharing an input tile run together and read it from
L2. Bias added in the epilogue, one store. fp16 inputs use fp16 tensor cores; fp32 inputs use tf32x3 (three
TF32 products per fp32 product: fp32-accurate on tensor cores, where plain TF32 would not meet fp32 tolerances).

Expected bottleneck: at the production shape (CIN = COUT = 96, L = 200) memory bandwidth and load-issue rate
(the reduction is only 288 deep: ~100 flops per byte of x in fp16 with all COUT blocks served from L2); tensor
cores at the out-of-distribution (64, 768, 768, 1024), where cuDNN's tuned kernels are hard to beat.
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl

# Launch parameters; a tuner re-binds these module constants (values from TUNABLES).
BLOCK_CO = 32
BLOCK_CI = 32
BLOCK_P = 128
NUM_WARPS = 4
NUM_STAGES = 2

TUNABLES = {
    "BLOCK_CO": [16, 32, 64, 128],
    "BLOCK_CI": [16, 32, 64],
    "BLOCK_P": [32, 64, 128, 256],
    "NUM_WARPS": [2, 4, 8],
    "NUM_STAGES": [1, 2, 3, 4],
}

_INTERPRETER_BLOCK_P = 1024  # Triton's interpreter (CPU): fewer, larger programs


@triton.jit
def _conv1d_kernel(
    x_ptr,
    w_ptr,
    bias_ptr,
    out_ptr,
    n_pos,
    cin,
    cout,
    length,
    KS: tl.constexpr,
    PAD: tl.constexpr,
    BLOCK_CO: tl.constexpr,
    BLOCK_CI: tl.constexpr,
    BLOCK_P: tl.constexpr,
    FP32_ACCURATE: tl.constexpr,
):
    co = tl.program_id(0) * BLOCK_CO + tl.arange(0, BLOCK_CO)
    co_ok = co < cout
    p = tl.program_id(1).to(tl.int64) * BLOCK_P + tl.arange(0, BLOCK_P)
    p_ok = p < n_pos
    b = p // length
    pos = p % length
    x_seq = b * cin * length  # offset of x[b]
    acc = tl.zeros([BLOCK_CO, BLOCK_P], dtype=tl.float32)
    for ci0 in range(0, cin, BLOCK_CI):
        ci = ci0 + tl.arange(0, BLOCK_CI)
        ci_ok = ci < cin
        for k in tl.static_range(KS):
            w = tl.load(
                w_ptr + co[:, None] * (cin * KS) + ci[None, :] * KS + k,
                mask=co_ok[:, None] & ci_ok[None, :],
                other=0.0,
            )
            src = pos + (k - PAD)
            x_ok = p_ok & (src >= 0) & (src < length)
            x = tl.load(
                x_ptr + x_seq[None, :] + ci[:, None] * length + src[None, :],
                mask=ci_ok[:, None] & x_ok[None, :],
                other=0.0,
            )
            if FP32_ACCURATE:
                acc += tl.dot(w, x, input_precision="tf32x3")
            else:
                acc += tl.dot(w, x)
    acc += tl.load(bias_ptr + co, mask=co_ok, other=0.0).to(tl.float32)[:, None]
    out_offs = (b * cout * length + pos)[None, :] + co[:, None] * length
    tl.store(out_ptr + out_offs, acc.to(out_ptr.dtype.element_ty), mask=co_ok[:, None] & p_ok[None, :])


class ModelNew(nn.Module):
    def __init__(self, cin: int, cout: int, kernel_size: int = 3, padding: int = 1):
        super().__init__()
        # Parameter holder only, named as in the reference so the harness's state_dict copy fills it.
        self.conv = nn.Conv1d(cin, cout, kernel_size, padding=padding)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        batch, cin, length = x.shape
        weight = self.conv.weight.detach().contiguous()
        bias = self.conv.bias.detach().contiguous()
        cout, _, ks = weight.shape
        pad = self.conv.padding[0]
        out_len = length + 2 * pad - ks + 1
        assert out_len == length, "this kernel computes 'same'-length convolutions (stride 1, 2 * padding = k - 1)"
        out = torch.empty((batch, cout, length), dtype=x.dtype, device=x.device)
        if out.numel() == 0:
            return out
        n_pos = batch * length
        block_p = BLOCK_P if x.is_cuda else max(BLOCK_P, min(_INTERPRETER_BLOCK_P, triton.next_power_of_2(n_pos)))
        grid = (triton.cdiv(cout, BLOCK_CO), triton.cdiv(n_pos, block_p))
        _conv1d_kernel[grid](
            x,
            weight,
            bias,
            out,
            n_pos,
            cin,
            cout,
            length,
            KS=ks,
            PAD=pad,
            BLOCK_CO=BLOCK_CO,
            BLOCK_CI=BLOCK_CI,
            BLOCK_P=block_p,
            FP32_ACCURATE=x.dtype == torch.float32,
            num_warps=NUM_WARPS,
            num_stages=NUM_STAGES,
        )
        return out
