import math

import torch
import torch.nn as nn
import triton
import triton.language as tl

# ---------------------------------------------------------------------------
# Tunables (every listed value yields a valid kernel)
# ---------------------------------------------------------------------------
GEMM_BM = 128
GEMM_BN = 128
GEMM_BK = 32
GEMM_GROUP = 8
GEMM_WARPS = 8
GEMM_STAGES = 3

ATT_BM = 128
ATT_BN = 64
ATT_WARPS = 8
ATT_STAGES = 3

TUNABLES = {
    "GEMM_BM": [64, 128],
    "GEMM_BN": [64, 128],
    "GEMM_BK": [16, 32],
    "GEMM_GROUP": [4, 8, 16],
    "GEMM_WARPS": [4, 8],
    "GEMM_STAGES": [2, 3, 4],
    "ATT_BM": [64, 128],
    "ATT_BN": [32, 64],
    "ATT_WARPS": [4, 8],
    "ATT_STAGES": [1, 2, 3],
}

LOG2E = 1.4426950408889634


# ---------------------------------------------------------------------------
# Linear: C[M, N] = A[M, K] @ W[N, K]^T + bias[N]   (fp32, 3xTF32 tensor cores)
# ---------------------------------------------------------------------------
@triton.jit
def _linear_bias_kernel(
    a_ptr, w_ptr, bias_ptr, c_ptr,
    M, N, K,
    stride_am, stride_wn, stride_cm,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
    GROUP_M: tl.constexpr, EVEN: tl.constexpr,
):
    pid = tl.program_id(0)
    num_pid_m = tl.cdiv(M, BLOCK_M)
    num_pid_n = tl.cdiv(N, BLOCK_N)
    num_pid_in_group = GROUP_M * num_pid_n
    group_id = pid // num_pid_in_group
    first_pid_m = group_id * GROUP_M
    group_size_m = tl.minimum(num_pid_m - first_pid_m, GROUP_M)
    pid_in_group = pid % num_pid_in_group
    pid_m = first_pid_m + (pid_in_group % group_size_m)
    pid_n = pid_in_group // group_size_m

    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_k = tl.arange(0, BLOCK_K)

    a_ptrs = a_ptr + offs_m.to(tl.int64)[:, None] * stride_am + offs_k[None, :]
    # W tile viewed as [BLOCK_K, BLOCK_N]; K is contiguous (K-major B operand)
    w_ptrs = w_ptr + offs_n.to(tl.int64)[None, :] * stride_wn + offs_k[:, None]

    m_mask = offs_m < M
    n_mask = offs_n < N

    acc = tl.zeros([BLOCK_M, BLOCK_N], dtype=tl.float32)
    for kk in range(0, tl.cdiv(K, BLOCK_K)):
        if EVEN:
            a = tl.load(a_ptrs)
            w = tl.load(w_ptrs)
        else:
            k_mask = offs_k < K - kk * BLOCK_K
            a = tl.load(a_ptrs, mask=m_mask[:, None] & k_mask[None, :], other=0.0)
            w = tl.load(w_ptrs, mask=k_mask[:, None] & n_mask[None, :], other=0.0)
        acc = tl.dot(a, w, acc, input_precision="tf32x3")
        a_ptrs += BLOCK_K
        w_ptrs += BLOCK_K

    if EVEN:
        bias = tl.load(bias_ptr + offs_n)
    else:
        bias = tl.load(bias_ptr + offs_n, mask=n_mask, other=0.0)
    acc = acc + bias[None, :]

    c_ptrs = c_ptr + offs_m.to(tl.int64)[:, None] * stride_cm + offs_n[None, :]
    if EVEN:
        tl.store(c_ptrs, acc)
    else:
        tl.store(c_ptrs, acc, mask=m_mask[:, None] & n_mask[None, :])


# ---------------------------------------------------------------------------
# Causal flash attention reading q/k/v straight out of the qkv buffer
# qkv: [B*T, 3C] (q | k | v, heads side by side), y: [B*T, C]
# head dim HEAD_D = D0 + D1 (D0, D1 powers of two; e.g. 96 = 64 + 32)
# ---------------------------------------------------------------------------
@triton.jit
def _causal_attn_kernel(
    qkv_ptr, y_ptr,
    T, H, C, stride_qkv, stride_y, qk_scale,
    HEAD_D: tl.constexpr, D0: tl.constexpr, D1: tl.constexpr,
    HAS_TAIL: tl.constexpr,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
):
    bh = tl.program_id(0)
    pid_m = tl.num_programs(1) - 1 - tl.program_id(1)  # heavy (late) rows first
    b = bh // H
    h = bh % H
    start_m = pid_m * BLOCK_M
    row_base = b * T

    q_col = h * HEAD_D
    k_col = C + h * HEAD_D
    v_col = 2 * C + h * HEAD_D

    offs_m = start_m + tl.arange(0, BLOCK_M)
    offs_n = tl.arange(0, BLOCK_N)
    offs_d0 = tl.arange(0, D0)
    m_mask = offs_m < T

    rows_m = (row_base + offs_m).to(tl.int64) * stride_qkv
    q0 = tl.load(qkv_ptr + rows_m[:, None] + q_col + offs_d0[None, :],
                 mask=m_mask[:, None], other=0.0)
    acc0 = tl.zeros([BLOCK_M, D0], dtype=tl.float32)
    if HAS_TAIL:
        offs_d1 = D0 + tl.arange(0, D1)
        q1 = tl.load(qkv_ptr + rows_m[:, None] + q_col + offs_d1[None, :],
                     mask=m_mask[:, None], other=0.0)
        acc1 = tl.zeros([BLOCK_M, D1], dtype=tl.float32)

    m_i = tl.full([BLOCK_M], float("-inf"), dtype=tl.float32)
    l_i = tl.zeros([BLOCK_M], dtype=tl.float32)

    # ---- blocks strictly below the diagonal: no mask needed ----
    for start_n in range(0, start_m, BLOCK_N):
        n_idx = start_n + offs_n
        rows_n = (row_base + n_idx).to(tl.int64) * stride_qkv
        k0 = tl.load(qkv_ptr + rows_n[:, None] + k_col + offs_d0[None, :])
        s = tl.dot(q0, tl.trans(k0), input_precision="tf32x3")
        if HAS_TAIL:
            k1 = tl.load(qkv_ptr + rows_n[:, None] + k_col + offs_d1[None, :])
            s = tl.dot(q1, tl.trans(k1), s, input_precision="tf32x3")
        s = s * qk_scale
        m_new = tl.maximum(m_i, tl.max(s, 1))
        alpha = tl.exp2(m_i - m_new)
        p = tl.exp2(s - m_new[:, None])
        l_i = l_i * alpha + tl.sum(p, 1)
        v0 = tl.load(qkv_ptr + rows_n[:, None] + v_col + offs_d0[None, :])
        acc0 = acc0 * alpha[:, None]
        acc0 = tl.dot(p, v0, acc0, input_precision="tf32x3")
        if HAS_TAIL:
            v1 = tl.load(qkv_ptr + rows_n[:, None] + v_col + offs_d1[None, :])
            acc1 = acc1 * alpha[:, None]
            acc1 = tl.dot(p, v1, acc1, input_precision="tf32x3")
        m_i = m_new

    # ---- diagonal blocks: causal + bounds mask ----
    hi = tl.minimum(start_m + BLOCK_M, T)
    for start_n in range(start_m, hi, BLOCK_N):
        n_idx = start_n + offs_n
        n_mask = n_idx < T
        rows_n = (row_base + n_idx).to(tl.int64) * stride_qkv
        k0 = tl.load(qkv_ptr + rows_n[:, None] + k_col + offs_d0[None, :],
                     mask=n_mask[:, None], other=0.0)
        s = tl.dot(q0, tl.trans(k0), input_precision="tf32x3")
        if HAS_TAIL:
            k1 = tl.load(qkv_ptr + rows_n[:, None] + k_col + offs_d1[None, :],
                         mask=n_mask[:, None], other=0.0)
            s = tl.dot(q1, tl.trans(k1), s, input_precision="tf32x3")
        s = s * qk_scale
        keep = (offs_m[:, None] >= n_idx[None, :]) & n_mask[None, :]
        s = tl.where(keep, s, float("-inf"))
        m_new = tl.maximum(m_i, tl.max(s, 1))
        alpha = tl.exp2(m_i - m_new)
        p = tl.exp2(s - m_new[:, None])
        l_i = l_i * alpha + tl.sum(p, 1)
        v0 = tl.load(qkv_ptr + rows_n[:, None] + v_col + offs_d0[None, :],
                     mask=n_mask[:, None], other=0.0)
        acc0 = acc0 * alpha[:, None]
        acc0 = tl.dot(p, v0, acc0, input_precision="tf32x3")
        if HAS_TAIL:
            v1 = tl.load(qkv_ptr + rows_n[:, None] + v_col + offs_d1[None, :],
                         mask=n_mask[:, None], other=0.0)
            acc1 = acc1 * alpha[:, None]
            acc1 = tl.dot(p, v1, acc1, input_precision="tf32x3")
        m_i = m_new

    inv_l = 1.0 / l_i
    rows_y = (row_base + offs_m).to(tl.int64) * stride_y
    out0 = acc0 * inv_l[:, None]
    tl.store(y_ptr + rows_y[:, None] + q_col + offs_d0[None, :], out0,
             mask=m_mask[:, None])
    if HAS_TAIL:
        out1 = acc1 * inv_l[:, None]
        tl.store(y_ptr + rows_y[:, None] + q_col + offs_d1[None, :], out1,
                 mask=m_mask[:, None])


# ---------------------------------------------------------------------------
# Host wrappers
# ---------------------------------------------------------------------------
def _linear(a, w, bias, out):
    M, K = a.shape
    N = w.shape[0]
    even = (M % GEMM_BM == 0) and (N % GEMM_BN == 0) and (K % GEMM_BK == 0)
    grid = (triton.cdiv(M, GEMM_BM) * triton.cdiv(N, GEMM_BN),)
    _linear_bias_kernel[grid](
        a, w, bias, out,
        M, N, K,
        a.stride(0), w.stride(0), out.stride(0),
        BLOCK_M=GEMM_BM, BLOCK_N=GEMM_BN, BLOCK_K=GEMM_BK,
        GROUP_M=GEMM_GROUP, EVEN=even,
        num_warps=GEMM_WARPS, num_stages=GEMM_STAGES,
    )
    return out


def _split_head_dim(hs):
    d0 = 1
    while d0 * 2 <= hs:
        d0 *= 2
    d1 = hs - d0
    if d1 == 0:
        return d0, 16, False
    assert d1 >= 16 and (d1 & (d1 - 1)) == 0, "unsupported head size"
    return d0, d1, True


class ModelNew(nn.Module):
    def __init__(self, n_embd, n_head, attn_pdrop, resid_pdrop, max_seqlen):
        super().__init__()
        assert n_embd % n_head == 0
        self.c_attn = nn.Linear(n_embd, 3 * n_embd)
        self.c_proj = nn.Linear(n_embd, n_embd)
        self.attn_dropout = nn.Dropout(attn_pdrop)
        self.resid_dropout = nn.Dropout(resid_pdrop)
        self.register_buffer("bias", torch.tril(torch.ones(max_seqlen, max_seqlen))
                             .view(1, 1, max_seqlen, max_seqlen))
        self.n_head = n_head
        self.n_embd = n_embd

    def forward(self, x):
        B, T, C = x.size()
        H = self.n_head
        hs = C // H
        M = B * T

        x2 = x.contiguous().view(M, C)
        w_attn = self.c_attn.weight.contiguous()
        b_attn = self.c_attn.bias.contiguous()
        w_proj = self.c_proj.weight.contiguous()
        b_proj = self.c_proj.bias.contiguous()

        # 1) fused QKV projection
        qkv = torch.empty((M, 3 * C), device=x.device, dtype=torch.float32)
        _linear(x2, w_attn, b_attn, qkv)

        # 2) causal flash attention, heads written side by side into y
        y = torch.empty((M, C), device=x.device, dtype=torch.float32)
        d0, d1, has_tail = _split_head_dim(hs)
        qk_scale = (1.0 / math.sqrt(hs)) * LOG2E
        grid = (B * H, triton.cdiv(T, ATT_BM))
        _causal_attn_kernel[grid](
            qkv, y,
            T, H, C, qkv.stride(0), y.stride(0), qk_scale,
            HEAD_D=hs, D0=d0, D1=d1, HAS_TAIL=has_tail,
            BLOCK_M=ATT_BM, BLOCK_N=ATT_BN,
            num_warps=ATT_WARPS, num_stages=ATT_STAGES,
        )

        # 3) output projection (dropout p=0 -> identity)
        out = torch.empty((M, C), device=x.device, dtype=torch.float32)
        _linear(y, w_proj, b_proj, out)
        return out.view(B, T, C)
