"""RMSNorm forward in float16 with float32 statistics: y = x / sqrt(mean(x^2) + eps) * weight.

x [ROWS, HIDDEN] and weight are float16; the reference upcasts to float32 for the statistics (as model code
does): in float16, x^2 overflows (65504) once |x| > 256. KernelBench-format problem: Model, get_inputs(),
get_init_inputs(), plus SHAPE_CASES and DTYPE.
"""

import torch
import torch.nn as nn

ROWS = 1024
HIDDEN = 2048
EPS = 1e-6

SHAPE_CASES = [
    {"ROWS": 1024, "HIDDEN": 2048},  # primary
    {"ROWS": 499, "HIDDEN": 3000},  # neither a power of two
]

DTYPE = torch.float16


class Model(nn.Module):
    def __init__(self, hidden: int, eps: float = EPS):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.randn(hidden))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        xf = x.float()
        y = xf * torch.rsqrt(xf.pow(2).mean(dim=-1, keepdim=True) + self.eps)
        return (y * self.weight.float()).to(x.dtype)


def get_inputs():
    return [torch.randn(ROWS, HIDDEN)]


def get_init_inputs():
    return [HIDDEN]
