import torch
import torch.nn as nn
import triton
import triton.language as tl
from triton.language.extra import libdevice

# ---------------------------------------------------------------------------
# Tunables
# ---------------------------------------------------------------------------
BLOCK_M = 128
BLOCK_N = 128
BLOCK_K = 32
GROUP_M = 8
NUM_WARPS = 8
NUM_STAGES = 3
SOFTMAX_BLOCK = 4096
SOFTMAX_WARPS = 8

TUNABLES = {
    "BLOCK_M": [64, 128],
    "BLOCK_N": [64, 128],
    "BLOCK_K": [16, 32],
    "GROUP_M": [8, 16],
    "NUM_WARPS": [4, 8],
    "NUM_STAGES": [2, 3, 4],
    "SOFTMAX_BLOCK": [2048, 4096, 8192],
    "SOFTMAX_WARPS": [4, 8, 16],
}


# ---------------------------------------------------------------------------
# Kernel 1: y = gelu(x @ W^T + b), plus per-(row, N-tile) softmax statistics
# ---------------------------------------------------------------------------
@triton.jit
def _linear_gelu_stats_kernel(
    x_ptr, w_ptr, b_ptr, y_ptr, pmax_ptr, psum_ptr,
    M, N, K, NPN,
    stride_xm, stride_xk,
    stride_wn, stride_wk,
    stride_ym, stride_yn,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
    GROUP_M: tl.constexpr, EVEN_K: tl.constexpr,
):
    pid = tl.program_id(0)
    num_pid_m = tl.cdiv(M, BLOCK_M)
    num_pid_n = tl.cdiv(N, BLOCK_N)
    num_pid_in_group = GROUP_M * num_pid_n
    group_id = pid // num_pid_in_group
    first_pid_m = group_id * GROUP_M
    group_size_m = min(num_pid_m - first_pid_m, GROUP_M)
    pid_m = first_pid_m + ((pid % num_pid_in_group) % group_size_m)
    pid_n = (pid % num_pid_in_group) // group_size_m

    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_k = tl.arange(0, BLOCK_K)
    rm = offs_m % M   # wrapped indices: loads always in bounds
    rn = offs_n % N

    a_ptrs = x_ptr + rm[:, None] * stride_xm + offs_k[None, :] * stride_xk      # [BM, BK]
    b_ptrs = w_ptr + rn[None, :] * stride_wn + offs_k[:, None] * stride_wk      # [BK, BN] = W^T tile

    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for kk in range(0, tl.cdiv(K, BLOCK_K)):
        if EVEN_K:
            a = tl.load(a_ptrs)
            b = tl.load(b_ptrs)
        else:
            k_rem = K - kk * BLOCK_K
            a = tl.load(a_ptrs, mask=offs_k[None, :] < k_rem, other=0.0)
            b = tl.load(b_ptrs, mask=offs_k[:, None] < k_rem, other=0.0)
        acc = tl.dot(a, b, acc, input_precision="tf32x3")
        a_ptrs += BLOCK_K * stride_xk
        b_ptrs += BLOCK_K * stride_wk

    mask_m = offs_m < M
    mask_n = offs_n < N

    bias = tl.load(b_ptr + offs_n, mask=mask_n, other=0.0)
    v = acc + bias[None, :]
    # exact (erf) GELU, as torch.nn.functional.gelu default
    v = 0.5 * v * (1.0 + libdevice.erf(v * 0.7071067811865476))

    y_ptrs = y_ptr + offs_m[:, None] * stride_ym + offs_n[None, :] * stride_yn
    tl.store(y_ptrs, v, mask=mask_m[:, None] & mask_n[None, :])

    # per-tile row statistics for the softmax
    vm = tl.where(mask_n[None, :], v, float("-inf"))
    tmax = tl.max(vm, axis=1)
    p = libdevice.exp(vm - tmax[:, None])
    tsum = tl.sum(p, axis=1)
    stat_off = offs_m * NPN + pid_n
    tl.store(pmax_ptr + stat_off, tmax, mask=mask_m)
    tl.store(psum_ptr + stat_off, tsum, mask=mask_m)


# ---------------------------------------------------------------------------
# Kernel 2: merge per-tile stats, normalise the row (one read + one write)
# ---------------------------------------------------------------------------
@triton.jit
def _softmax_finalize_kernel(
    y_ptr, out_ptr, pmax_ptr, psum_ptr,
    N, NPN, stride_ym, stride_om,
    BLOCK_P: tl.constexpr, BLOCK: tl.constexpr,
):
    row = tl.program_id(0)
    offs_p = tl.arange(0, BLOCK_P)
    pmask = offs_p < NPN
    pm = tl.load(pmax_ptr + row * NPN + offs_p, mask=pmask, other=float("-inf"))
    ps = tl.load(psum_ptr + row * NPN + offs_p, mask=pmask, other=0.0)
    m = tl.max(pm, axis=0)
    s = tl.sum(ps * libdevice.exp(pm - m), axis=0)

    y_row = y_ptr + row * stride_ym
    o_row = out_ptr + row * stride_om
    for start in range(0, N, BLOCK):
        offs = start + tl.arange(0, BLOCK)
        mask = offs < N
        v = tl.load(y_row + offs, mask=mask, other=float("-inf"))
        o = libdevice.exp(v - m) / s
        tl.store(o_row + offs, o, mask=mask)


# ---------------------------------------------------------------------------
# Module
# ---------------------------------------------------------------------------
class ModelNew(nn.Module):
    def __init__(self, in_features, out_features):
        super(ModelNew, self).__init__()
        self.linear = nn.Linear(in_features, out_features)

    def forward(self, x):
        x = x.contiguous()
        w = self.linear.weight
        b = self.linear.bias
        M, K = x.shape
        N = w.shape[0]

        y = torch.empty((M, N), device=x.device, dtype=torch.float32)
        npn = triton.cdiv(N, BLOCK_N)
        pmax = torch.empty((M, npn), device=x.device, dtype=torch.float32)
        psum = torch.empty((M, npn), device=x.device, dtype=torch.float32)

        grid = (triton.cdiv(M, BLOCK_M) * npn,)
        _linear_gelu_stats_kernel[grid](
            x, w, b, y, pmax, psum,
            M, N, K, npn,
            x.stride(0), x.stride(1),
            w.stride(0), w.stride(1),
            y.stride(0), y.stride(1),
            BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N, BLOCK_K=BLOCK_K,
            GROUP_M=GROUP_M, EVEN_K=(K % BLOCK_K == 0),
            num_warps=NUM_WARPS, num_stages=NUM_STAGES,
        )

        block = min(SOFTMAX_BLOCK, triton.next_power_of_2(N))
        _softmax_finalize_kernel[(M,)](
            y, y, pmax, psum,
            N, npn, y.stride(0), y.stride(0),
            BLOCK_P=max(triton.next_power_of_2(npn), 2), BLOCK=block,
            num_warps=SOFTMAX_WARPS,
        )
        return y
