"""Tiled GEMM with a fused bias + SiLU epilogue (Triton): y = silu(x @ W.T + b).

Each program computes one BLOCK_M x BLOCK_N tile of y: it walks K in BLOCK_K steps, accumulating
tl.dot of fp16 tiles into an fp32 accumulator, then adds the bias and applies SiLU on the accumulator
before the single fp16 store. Programs are ordered in groups of GROUP_M tile-rows so that tiles that
share W columns run close together in time (better L2 reuse).
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl

BLOCK_M = 128
BLOCK_N = 128
BLOCK_K = 32
GROUP_M = 8
NUM_WARPS = 4
NUM_STAGES = 4

# Every combination fits the shared memory of an A100 or H100: at most 128x128x64 fp16 x 4 stages = 128 KB.
TUNABLES = {
    "BLOCK_M": [64, 128],
    "BLOCK_N": [64, 128],
    "BLOCK_K": [32, 64],
    "GROUP_M": [1, 4, 8],
    "NUM_WARPS": [4, 8],
    "NUM_STAGES": [2, 3, 4],
}


@triton.jit
def _linear_silu_kernel(
    x_ptr,
    w_ptr,
    b_ptr,
    y_ptr,
    M,
    N,
    K,
    stride_xm,
    stride_xk,
    stride_wn,
    stride_wk,
    stride_ym,
    stride_yn,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
    BLOCK_K: tl.constexpr,
    GROUP_M: tl.constexpr,
):
    pid = tl.program_id(0)
    num_pid_m = tl.cdiv(M, BLOCK_M)
    num_pid_n = tl.cdiv(N, BLOCK_N)
    # Grouped ordering: GROUP_M consecutive tile-rows sweep the tile-columns together.
    num_pid_in_group = GROUP_M * num_pid_n
    group_id = pid // num_pid_in_group
    first_pid_m = group_id * GROUP_M
    group_size_m = min(num_pid_m - first_pid_m, GROUP_M)
    pid_m = first_pid_m + ((pid % num_pid_in_group) % group_size_m)
    pid_n = (pid % num_pid_in_group) // group_size_m

    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_k = tl.arange(0, BLOCK_K)
    m_ok = offs_m < M
    n_ok = offs_n < N
    # int64 row offsets: M * stride can exceed 2**31 on large inputs.
    x_ptrs = x_ptr + offs_m[:, None].to(tl.int64) * stride_xm + offs_k[None, :] * stride_xk
    # W is [N, K]; read it as a [BLOCK_K, BLOCK_N] tile of W.T.
    w_ptrs = w_ptr + offs_n[None, :].to(tl.int64) * stride_wn + offs_k[:, None] * stride_wk

    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, K, BLOCK_K):
        k_ok = (k + offs_k) < K
        a = tl.load(x_ptrs, mask=m_ok[:, None] & k_ok[None, :], other=0.0)
        b = tl.load(w_ptrs, mask=k_ok[:, None] & n_ok[None, :], other=0.0)
        acc = tl.dot(a, b, acc)  # fp16 x fp16 -> fp32 accumulate (tensor cores on GPU)
        x_ptrs += BLOCK_K * stride_xk
        w_ptrs += BLOCK_K * stride_wk

    # Fused epilogue on the fp32 accumulator: no extra pass over y in memory.
    bias = tl.load(b_ptr + offs_n, mask=n_ok, other=0.0).to(tl.float32)
    z = acc + bias[None, :]
    y = z * tl.sigmoid(z)
    y_ptrs = y_ptr + offs_m[:, None].to(tl.int64) * stride_ym + offs_n[None, :] * stride_yn
    tl.store(y_ptrs, y.to(y_ptr.dtype.element_ty), mask=m_ok[:, None] & n_ok[None, :])


class ModelNew(nn.Module):
    def __init__(self, in_features: int, out_features: int):
        super().__init__()
        # Same names and shapes as the reference, so the harness copies its parameters in.
        self.weight = nn.Parameter(torch.randn(out_features, in_features) / in_features**0.5)
        self.bias = nn.Parameter(torch.randn(out_features))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        w = self.weight.detach()
        b = self.bias.detach().contiguous()
        m, k = x.shape
        n = w.shape[0]
        y = torch.empty((m, n), dtype=x.dtype, device=x.device)
        if m == 0 or n == 0:
            return y
        # In Triton's CPU interpreter each program costs milliseconds: keep the grid small there.
        block_m, block_n, block_k = (BLOCK_M, BLOCK_N, BLOCK_K) if x.is_cuda else (128, 128, 32)
        grid = (triton.cdiv(m, block_m) * triton.cdiv(n, block_n),)
        _linear_silu_kernel[grid](
            x,
            w,
            b,
            y,
            m,
            n,
            k,
            x.stride(0),
            x.stride(1),
            w.stride(0),
            w.stride(1),
            y.stride(0),
            y.stride(1),
            BLOCK_M=block_m,
            BLOCK_N=block_n,
            BLOCK_K=block_k,
            GROUP_M=GROUP_M,
            num_warps=NUM_WARPS,
            num_stages=NUM_STAGES,
        )
        return y
