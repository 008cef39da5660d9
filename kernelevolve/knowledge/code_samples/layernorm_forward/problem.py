"""LayerNorm forward over the last dimension with a learned weight and bias, float32.

y = (x - mean(x)) / sqrt(var(x) + eps) * weight + bias, per row of x [ROWS, HIDDEN].
KernelBench-format problem: Model, get_inputs(), get_init_inputs(), plus SHAPE_CASES.
"""

import torch
import torch.nn as nn
import torch.nn.functional as F

ROWS = 2048
HIDDEN = 1024
EPS = 1e-5

SHAPE_CASES = [
    {"ROWS": 2048, "HIDDEN": 1024},  # primary
    {"ROWS": 1000, "HIDDEN": 1536},  # neither a power of two
]


class Model(nn.Module):
    def __init__(self, hidden: int, eps: float = EPS):
        super().__init__()
        self.eps = eps
        # randn, not ones/zeros: a kernel that ignores the parameters must fail.
        self.weight = nn.Parameter(torch.randn(hidden))
        self.bias = nn.Parameter(torch.randn(hidden))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.layer_norm(x, (x.shape[-1],), self.weight, self.bias, self.eps)


def get_inputs():
    return [torch.randn(ROWS, HIDDEN)]


def get_init_inputs():
    return [HIDDEN]
