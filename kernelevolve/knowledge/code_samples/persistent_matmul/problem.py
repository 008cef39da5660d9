"""Matrix product y = x @ weight, float16, weight a [K, N] parameter.

KernelBench-format problem: Model, get_inputs(), get_init_inputs(), plus SHAPE_CASES and DTYPE.
"""

import torch
import torch.nn as nn

M = 384
K = 128
N = 384

SHAPE_CASES = [
    {"M": 384, "K": 128, "N": 384},  # primary: 9 output tiles of 128 x 128, an uneven share per program
    {"M": 333, "K": 72, "N": 200},  # ragged in every dimension
]

DTYPE = torch.float16


class Model(nn.Module):
    def __init__(self, k: int, n: int):
        super().__init__()
        # Scaled so that outputs stay O(1) (and far from the fp16 limit) for O(1) inputs.
        self.weight = nn.Parameter(torch.randn(k, n) / k**0.5)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.matmul(x, self.weight)


def get_inputs():
    return [torch.randn(M, K)]


def get_init_inputs():
    return [K, N]
