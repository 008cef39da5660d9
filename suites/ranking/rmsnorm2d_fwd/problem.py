"""RMSNorm 2D, forward: normalise every row of a 2-D tensor by its root mean square, times a learned weight.

x: float32 [ROWS, COLS]; weight: float32 [COLS] (a learned parameter, drawn from randn so that a kernel which
ignores it fails).

    y = x / sqrt(mean(x**2, dim=-1) + 1e-6) * weight

Output: float32 [ROWS, COLS]. The reference is the textbook PyTorch expression (pow, mean, rsqrt, two
multiplies: several passes over memory). The paper's RMSNorm 2D numbers are for the backward (17x on MTIA);
see ../rmsnorm2d_bwd.

Shapes: (ROWS, COLS): ranking activations, many rows of 96-1024 features.
"""

import torch
import torch.nn as nn

ROWS = 32768
COLS = 256
EPS = 1e-6

SHAPE_CASES = [
    {"ROWS": 32768, "COLS": 256},  # primary
    {"ROWS": 65536, "COLS": 128},
    {"ROWS": 8192, "COLS": 1024},
    {"ROWS": 20000, "COLS": 96},  # nothing a power of two
    {"ROWS": 256, "COLS": 16384},  # out of distribution: few, very wide rows
]

# Every distribution: the norm is scale-invariant, so x100 or heavy-tailed rows keep the error relative to the row.


class Model(nn.Module):
    def __init__(self, cols: int, eps: float = EPS):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.randn(cols))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x * torch.rsqrt(x.pow(2).mean(dim=-1, keepdim=True) + self.eps) * self.weight


def get_inputs():
    return [torch.randn(ROWS, COLS)]


def get_init_inputs():
    return [COLS]
