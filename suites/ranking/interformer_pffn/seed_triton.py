"""Triton seed for interformer_pffn: FFN -> GELU -> RMSNorm -> FFN -> RMSNorm in one kernel, one pass over x.

Technique: one program per BLOCK_M rows; nothing but x, the weights and y touch memory. The hidden layer
(K wide) is produced and consumed BLOCK_K columns at a time and never materialised:
- h = x @ W1[kblock]^T + b1 (tensor-core dot, fp32 accumulation; x stays in registers when D <= 256), then the
  exact GELU g in registers;
- RMSNorm 1 needs the mean of g^2 over all K columns before any of them can be normalised, but its per-row scale
  commutes with the second GEMM: fc2(norm1(g)) = rstd1 * ((g * w_n1) @ W2^T) + b2. So each block adds
  (g * w_n1) @ W2[:, kblock]^T into a [BLOCK_M, D] fp32 accumulator and sum(g^2) into a per-row sum, and rstd1
  is applied once at the end;
- then + b2, RMSNorm 2 over the D columns held in registers, times w_n2, one fp16 store.
PyTorch runs five kernels with fp16 round trips of [ROWS, K] and [ROWS, D] tensors between them.

Expected bottleneck: tensor-core throughput of the two GEMMs (2 * D * K flops per row each, weights reused
from L2/shared memory across the BLOCK_M rows), and the GELU's erf on the CUDA cores; memory is one read of x and
one write of y.
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl

EPS = 1e-6

# Launch parameters; a tuner re-binds these module constants (values from TUNABLES).
BLOCK_M = 64  # rows per program (fewer for wide D, see _block_m)
BLOCK_K = 32  # hidden columns per step
NUM_WARPS = 8
NUM_STAGES = 2

TUNABLES = {
    "BLOCK_M": [16, 32, 64, 128],
    "BLOCK_K": [16, 32, 64, 128],
    "NUM_WARPS": [4, 8],
    "NUM_STAGES": [1, 2, 3],
}

_MAX_DK = 256  # widest x slice held in registers: x stays resident for D <= 256
_ACC_ELEMS = 16384  # cap on BLOCK_M * D, the fp32 output accumulator of a program
_INTERPRETER_ROWS = 512  # rows per program in Triton's interpreter (CPU), where programs are slow


@triton.jit
def _pffn_kernel(
    x_ptr,
    w1_ptr,
    b1_ptr,
    n1_ptr,
    w2_ptr,
    b2_ptr,
    n2_ptr,
    out_ptr,
    n_rows,
    d,
    k,
    eps,
    BLOCK_M: tl.constexpr,
    BLOCK_D: tl.constexpr,
    BLOCK_DK: tl.constexpr,
    BLOCK_K: tl.constexpr,
    X_RESIDENT: tl.constexpr,
):
    rows = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    row_ok = rows < n_rows
    x_rows = x_ptr + rows.to(tl.int64)[:, None] * d
    dcols = tl.arange(0, BLOCK_D)
    dcol_ok = dcols < d
    dk = tl.arange(0, BLOCK_DK)
    if X_RESIDENT:
        xa = tl.load(x_rows + dk[None, :], mask=row_ok[:, None] & (dk < d)[None, :], other=0.0)

    acc = tl.zeros([BLOCK_M, BLOCK_D], dtype=tl.float32)  # (g * w_n1) @ W2^T, before rstd1
    sum_sq = tl.zeros([BLOCK_M], dtype=tl.float32)  # sum over K of g^2
    for k0 in range(0, k, BLOCK_K):
        kk = k0 + tl.arange(0, BLOCK_K)
        k_ok = kk < k
        # h = x @ W1[kk]^T  (W1 is [K, D], read transposed as [D, BLOCK_K])
        if X_RESIDENT:
            w1t = tl.load(w1_ptr + kk[None, :] * d + dk[:, None], mask=(dk < d)[:, None] & k_ok[None, :], other=0.0)
            h = tl.dot(xa, w1t)
        else:
            h = tl.zeros([BLOCK_M, BLOCK_K], dtype=tl.float32)
            for d0 in range(0, d, BLOCK_DK):
                dd = d0 + dk
                xs = tl.load(x_rows + dd[None, :], mask=row_ok[:, None] & (dd < d)[None, :], other=0.0)
                w1t = tl.load(w1_ptr + kk[None, :] * d + dd[:, None], mask=(dd < d)[:, None] & k_ok[None, :], other=0.0)
                h += tl.dot(xs, w1t)
        h += tl.load(b1_ptr + kk, mask=k_ok, other=0.0).to(tl.float32)[None, :]
        g = 0.5 * h * (1.0 + tl.math.erf(h * 0.7071067811865476))  # exact GELU; 0 in masked columns
        sum_sq += tl.sum(g * g, axis=1)
        gw = g * tl.load(n1_ptr + kk, mask=k_ok, other=0.0).to(tl.float32)[None, :]
        # acc += (g * w_n1) @ W2[:, kk]^T  (W2 is [D, K], read transposed as [BLOCK_K, D])
        w2t = tl.load(w2_ptr + dcols[None, :] * k + kk[:, None], mask=k_ok[:, None] & dcol_ok[None, :], other=0.0)
        acc += tl.dot(gw.to(w2t.dtype), w2t)

    rstd1 = 1.0 / tl.sqrt(sum_sq / k + eps)
    h2 = acc * rstd1[:, None] + tl.load(b2_ptr + dcols, mask=dcol_ok, other=0.0).to(tl.float32)[None, :]
    rstd2 = 1.0 / tl.sqrt(tl.sum(h2 * h2, axis=1) / d + eps)  # padded columns of h2 are 0
    y = h2 * rstd2[:, None] * tl.load(n2_ptr + dcols, mask=dcol_ok, other=0.0).to(tl.float32)[None, :]
    tl.store(
        out_ptr + rows.to(tl.int64)[:, None] * d + dcols[None, :],
        y.to(out_ptr.dtype.element_ty),
        mask=row_ok[:, None] & dcol_ok[None, :],
    )


class ModelNew(nn.Module):
    def __init__(self, d: int, k: int, eps: float = EPS):
        super().__init__()
        self.eps = eps
        # Parameter holders only, named as in the reference so the harness's state_dict copy fills them.
        self.fc1 = nn.Linear(d, k)
        self.norm1 = nn.RMSNorm(k, eps=eps)
        self.fc2 = nn.Linear(k, d)
        self.norm2 = nn.RMSNorm(d, eps=eps)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        n_rows, d = x.shape
        k = self.fc1.weight.shape[0]
        out = torch.empty_like(x)
        if n_rows == 0:
            return out
        block_d = max(16, triton.next_power_of_2(d))
        block_dk = min(block_d, _MAX_DK)
        block_m = max(16, min(BLOCK_M, _ACC_ELEMS // block_d))
        if not x.is_cuda:
            block_m = max(block_m, min(triton.next_power_of_2(n_rows), _INTERPRETER_ROWS))
        _pffn_kernel[(triton.cdiv(n_rows, block_m),)](
            x,
            self.fc1.weight.detach().contiguous(),
            self.fc1.bias.detach().contiguous(),
            self.norm1.weight.detach().contiguous(),
            self.fc2.weight.detach().contiguous(),
            self.fc2.bias.detach().contiguous(),
            self.norm2.weight.detach().contiguous(),
            out,
            n_rows,
            d,
            k,
            float(self.eps),
            BLOCK_M=block_m,
            BLOCK_D=block_d,
            BLOCK_DK=block_dk,
            BLOCK_K=max(16, BLOCK_K),
            X_RESIDENT=block_dk >= d,
            num_warps=NUM_WARPS,
            num_stages=NUM_STAGES,
        )
        return out
