"""Linear layer with a fused epilogue: y = silu(x @ weight.T + bias), in float16.

KernelBench-format problem: Model, get_inputs(), get_init_inputs(), plus SHAPE_CASES and DTYPE.
"""

import torch
import torch.nn as nn
import torch.nn.functional as F

M = 256  # rows of x (tokens)
K = 128  # in_features
N = 384  # out_features

SHAPE_CASES = [
    {"M": 256, "K": 128, "N": 384},  # primary: every dimension a multiple of 128
    {"M": 300, "K": 136, "N": 200},  # ragged: masks on M, N and K
]

DTYPE = torch.float16


class Model(nn.Module):
    def __init__(self, in_features: int, out_features: int):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(out_features, in_features) / in_features**0.5)
        self.bias = nn.Parameter(torch.randn(out_features))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.silu(F.linear(x, self.weight, self.bias))


def get_inputs():
    return [torch.randn(M, K)]


def get_init_inputs():
    return [K, N]
