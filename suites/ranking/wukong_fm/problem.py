"""WuKong optimized FM: out = X @ (X^T @ Y) per batch element (KernelEvolve paper: 4.0x over PyTorch).

X: float16 [B, N, D] (N embeddings of dimension D per sample), Y: float16 [B, N, K] with K much larger than N
(the paper: N 24-64, K 256-2304). X^T @ Y is [B, D, K] and the output [B, N, K]. The reference is the two
batched GEMMs a ranking engineer writes; PyTorch materialises the intermediate X^T Y (rounded to float16) in
memory. A fused kernel keeps it on chip, which roughly halves the memory traffic.

D is not given by the paper; 64-128 here (embedding dimensions of that order keep X^T Y about the size of Y,
which is what makes the fusion pay).

Shapes: (BATCH, N, D, K).
"""

import torch
import torch.nn as nn

BATCH = 1024
N = 32
D = 64
K = 1024

SHAPE_CASES = [
    {"BATCH": 1024, "N": 32, "D": 64, "K": 1024},  # primary
    {"BATCH": 2048, "N": 24, "D": 64, "K": 256},  # the paper's smallest N and K
    {"BATCH": 512, "N": 64, "D": 128, "K": 2304},  # the paper's largest N and K
    {"BATCH": 1000, "N": 40, "D": 96, "K": 600},  # nothing a power of two
    {"BATCH": 32, "N": 1024, "D": 64, "K": 128},  # out of distribution: N much larger than K
]

# The speedup over eager `kernelevolve bench` checks on one shape case.
TARGET_SPEEDUP = {"speedup": 4.0, "case": 1, "note": "KernelEvolve paper: WuKong optimized FM 4.0x, checked at N = 24"}

DTYPE = torch.float16

# The reference rounds X^T Y to fp16 before the second GEMM; an honest kernel does the same, but accumulating
# in another order flips the rounding of a few X^T Y elements by one ulp (|X^T Y| ~ 4 sqrt(N): ulp 1/32 at
# N = 64), which moves an output by |x| ulp: up to 0.03 at the paper's shapes and 0.13 at N = 1024 (measured,
# float64 against PyTorch's fp16 bmm), above fp16's default atol of 1e-2 for outputs near 0. atol 0.25 covers it
# and stays far below a real error (outputs are ~sqrt(N D) ~ 45 at the primary shape).
TOLERANCE = {"atol": 0.25, "rtol": 1e-2}
# "large" (x100) inputs overflow fp16 in X^T Y; heavy-tailed ones give the same rounding flips at ~1000x the
# scale (needed atol ~5). Both are left out.
INPUT_DISTRIBUTIONS = ["given", "normal", "uniform_signed"]


def FLOPS():
    return 4.0 * BATCH * N * D * K  # two GEMMs of 2 * N * D * K each


class Model(nn.Module):
    """out = bmm(X, bmm(X^T, Y))."""

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        return torch.bmm(x, torch.bmm(x.transpose(1, 2), y))


def get_inputs():
    return [torch.randn(BATCH, N, D), torch.randn(BATCH, N, K)]


def get_init_inputs():
    return []
