"""InterFormer PFFN: FFN -> GELU -> RMSNorm -> FFN -> RMSNorm over the rows of a batch
(KernelEvolve paper: 2.5x over PyTorch, fused "in one pass").

x: float16 [ROWS, D]. With learned weights fc1 (D -> K, bias), norm1 (K), fc2 (K -> D, bias), norm2 (D):

    h = gelu(fc1(x))                       # exact (erf) GELU
    y = norm2(fc2(norm1(h)))               # norm(z) = z / sqrt(mean(z**2, -1) + 1e-6) * weight

Output: float16 [ROWS, D]. The reference is the nn.Module a ranking engineer writes (nn.Linear, nn.GELU,
nn.RMSNorm), five kernels with float16 round trips through memory between them. The norm weights are drawn
around 1 (not left at ones), so a kernel that ignores them fails.

Shapes: (ROWS, D, K), D and K in [96, 256] in the paper, from 256 rows (where the paper quotes 2.5x) up to 32k.
"""

import torch
import torch.nn as nn

ROWS = 16384
D = 128
K = 256
EPS = 1e-6

SHAPE_CASES = [
    {"ROWS": 16384, "D": 128, "K": 256},  # primary
    {"ROWS": 32768, "D": 256, "K": 256},  # the paper's largest rows and widths
    {"ROWS": 32768, "D": 96, "K": 96},  # the paper's smallest widths
    {"ROWS": 5000, "D": 160, "K": 192},  # rows not a power of two, widths not powers of two
    {"ROWS": 256, "D": 128, "K": 256},  # the paper's 2.5x is quoted at B <= 256: launch-bound
    {"ROWS": 4096, "D": 1024, "K": 4096},  # out of distribution: an LLM-sized FFN
]

# The speedup over eager `kernelevolve bench` checks on one shape case.
TARGET_SPEEDUP = {"speedup": 2.5, "case": 4, "note": "KernelEvolve paper: 2.5x at B <= 256"}

DTYPE = torch.float16

# Every distribution, default fp16 tolerance: both norms rescale each row, so the error stays relative to the row
# (measured: the fused seed needs atol <= 4e-3 on every distribution and shape, x100 included, |fc1(x)| ~ 60).


def FLOPS():
    return 4.0 * ROWS * D * K  # two GEMMs of 2 * ROWS * D * K each


class Model(nn.Module):
    def __init__(self, d: int, k: int, eps: float = EPS):
        super().__init__()
        self.fc1 = nn.Linear(d, k)
        self.act = nn.GELU()
        self.norm1 = nn.RMSNorm(k, eps=eps)
        self.fc2 = nn.Linear(k, d)
        self.norm2 = nn.RMSNorm(d, eps=eps)
        with torch.no_grad():
            self.norm1.weight.normal_(1.0, 0.5)
            self.norm2.weight.normal_(1.0, 0.5)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.norm2(self.fc2(self.norm1(self.act(self.fc1(x)))))


def get_inputs():
    return [torch.randn(ROWS, D)]


def get_init_inputs():
    return [D, K]
