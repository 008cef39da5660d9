import torch
import torch.nn as nn
import triton
import triton.language as tl

try:
    from triton.runtime.errors import OutOfResources as _OutOfResources
except Exception:  # pragma: no cover
    try:
        from triton.runtime.autotuner import OutOfResources as _OutOfResources
    except Exception:  # pragma: no cover
        _OutOfResources = RuntimeError

# ---------------------------------------------------------------------------
# Launch parameters (tunable)
# ---------------------------------------------------------------------------
# The op is compute-bound (137 GFLOP vs 320 MB). tf32x3 adds a fixed amount
# of accumulator-wide elementwise work per K step (temp accumulator, NaN
# scrub, add), so a deeper BLOCK_K amortises it over twice the MMA work.
BLOCK_M = 128
BLOCK_N = 128
BLOCK_K = 64
GROUP_M = 8
NUM_WARPS = 8
NUM_STAGES = 2

# Any combination is safe: if a config exceeds shared memory, the launcher
# retries with fewer pipeline stages (down to 1, which always fits here).
TUNABLES = {
    "BLOCK_M": [64, 128],
    "BLOCK_N": [64, 128],
    "BLOCK_K": [32, 64],
    "GROUP_M": [4, 8, 16],
    "NUM_WARPS": [4, 8],
    "NUM_STAGES": [2, 3, 4],
}

# Stage count that actually fit, per config (a launch parameter, not a result).
_STAGES_OK = {}


@triton.jit
def _gemm_mul_lrelu_kernel(
    x_ptr, w_ptr, b_ptr, out_ptr,
    M, N, K,
    stride_xm, stride_xk,
    stride_wn, stride_wk,
    stride_om, stride_on,
    multiplier, negative_slope,
    HAS_BIAS: tl.constexpr,
    EVEN_K: tl.constexpr,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
    BLOCK_K: tl.constexpr,
    GROUP_M: tl.constexpr,
):
    # ---- grouped tile ordering for L2 reuse ----
    pid = tl.program_id(0)
    num_pid_m = tl.cdiv(M, BLOCK_M)
    num_pid_n = tl.cdiv(N, BLOCK_N)
    num_pid_in_group = GROUP_M * num_pid_n
    group_id = pid // num_pid_in_group
    first_pid_m = group_id * GROUP_M
    group_size_m = min(num_pid_m - first_pid_m, GROUP_M)
    pid_in_group = pid % num_pid_in_group
    pid_m = first_pid_m + (pid_in_group % group_size_m)
    pid_n = pid_in_group // group_size_m

    # Row / column offsets for loads (wrapped so loads never go out of bounds;
    # the store is masked).
    offs_am = (pid_m * BLOCK_M + tl.arange(0, BLOCK_M)) % M
    offs_bn = (pid_n * BLOCK_N + tl.arange(0, BLOCK_N)) % N
    offs_am = tl.max_contiguous(tl.multiple_of(offs_am, BLOCK_M), BLOCK_M)
    offs_bn = tl.max_contiguous(tl.multiple_of(offs_bn, BLOCK_N), BLOCK_N)
    offs_k = tl.arange(0, BLOCK_K)

    # A tile: x[m, k]  -> [BLOCK_M, BLOCK_K]   (K-major)
    # B tile: W[n, k]^T -> [BLOCK_K, BLOCK_N]  (K-major, as tf32 wgmma wants)
    a_ptrs = x_ptr + offs_am[:, None] * stride_xm + offs_k[None, :] * stride_xk
    b_ptrs = w_ptr + offs_k[:, None] * stride_wk + offs_bn[None, :] * stride_wn

    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    num_k = tl.cdiv(K, BLOCK_K)
    for kk in range(0, num_k):
        if EVEN_K:
            a = tl.load(a_ptrs)
            b = tl.load(b_ptrs)
        else:
            k_rem = K - kk * BLOCK_K
            a = tl.load(a_ptrs, mask=offs_k[None, :] < k_rem, other=0.0)
            b = tl.load(b_ptrs, mask=offs_k[:, None] < k_rem, other=0.0)
        # Three TF32 tensor-core products (hi*hi + hi*lo + lo*hi), fp32 accumulate:
        # float32-accurate, no plain-TF32 rounding.
        acc = tl.dot(a, b, acc, input_precision="tf32x3")
        a_ptrs += BLOCK_K * stride_xk
        b_ptrs += BLOCK_K * stride_wk

    # ---- fused epilogue: + bias, * multiplier, LeakyReLU ----
    offs_cm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_cn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    mask_n = offs_cn < N
    y = acc
    if HAS_BIAS:
        bias = tl.load(b_ptr + offs_cn, mask=mask_n, other=0.0)
        y = y + bias[None, :]
    y = y * multiplier
    y = tl.where(y > 0, y, y * negative_slope)

    out_ptrs = out_ptr + offs_cm[:, None] * stride_om + offs_cn[None, :] * stride_on
    mask = (offs_cm[:, None] < M) & mask_n[None, :]
    tl.store(out_ptrs, y, mask=mask)


def _is_out_of_resources(e):
    if isinstance(e, _OutOfResources):
        return True
    msg = str(e).lower()
    return ("out of resource" in msg) or ("shared memory" in msg)


def _launch(x2, w, bias, out, M, N, K, has_bias, multiplier, negative_slope):
    grid = (triton.cdiv(M, BLOCK_M) * triton.cdiv(N, BLOCK_N),)
    key = (BLOCK_M, BLOCK_N, BLOCK_K, GROUP_M, NUM_WARPS, NUM_STAGES, has_bias)
    stages = _STAGES_OK.get(key, NUM_STAGES)
    while True:
        try:
            _gemm_mul_lrelu_kernel[grid](
                x2, w, bias, out,
                M, N, K,
                x2.stride(0), x2.stride(1),
                w.stride(0), w.stride(1),
                out.stride(0), out.stride(1),
                multiplier, negative_slope,
                HAS_BIAS=has_bias,
                EVEN_K=(K % BLOCK_K == 0),
                BLOCK_M=BLOCK_M,
                BLOCK_N=BLOCK_N,
                BLOCK_K=BLOCK_K,
                GROUP_M=GROUP_M,
                num_warps=NUM_WARPS,
                num_stages=stages,
            )
            break
        except Exception as e:  # shared-memory overflow at first compile/load
            if stages <= 1 or not _is_out_of_resources(e):
                raise
            stages -= 1
    _STAGES_OK[key] = stages


class ModelNew(nn.Module):
    """
    Gemm (x @ W^T + b) -> * multiplier -> LeakyReLU, fused into one Triton kernel.
    """

    def __init__(self, in_features, out_features, multiplier, negative_slope):
        super(ModelNew, self).__init__()
        # Kept as a module so parameter names (gemm.weight / gemm.bias) match the reference.
        self.gemm = nn.Linear(in_features, out_features)
        self.multiplier = float(multiplier)
        self.negative_slope = float(negative_slope)

    def forward(self, x):
        in_features = self.gemm.weight.shape[1]
        out_features = self.gemm.weight.shape[0]

        orig_shape = x.shape
        x2 = x.reshape(-1, in_features)
        if x2.dtype != torch.float32:
            x2 = x2.to(torch.float32)
        x2 = x2.contiguous()

        w = self.gemm.weight
        if w.dtype != torch.float32:
            w = w.to(torch.float32)
        w = w.contiguous()

        bias = self.gemm.bias
        has_bias = bias is not None
        if has_bias:
            if bias.dtype != torch.float32:
                bias = bias.to(torch.float32)
            bias = bias.contiguous()
        else:
            bias = w  # dummy pointer, never read

        M = x2.shape[0]
        K = in_features
        N = out_features

        out = torch.empty((M, N), device=x2.device, dtype=torch.float32)
        if M == 0 or N == 0:
            return out.reshape(*orig_shape[:-1], N)

        _launch(x2, w, bias, out, M, N, K, has_bias,
                self.multiplier, self.negative_slope)
        return out.reshape(*orig_shape[:-1], N)


batch_size = 1024
in_features = 8192
out_features = 8192
multiplier = 2.0
negative_slope = 0.1


def get_inputs():
    return [torch.rand(batch_size, in_features)]


def get_init_inputs():
    return [in_features, out_features, multiplier, negative_slope]
