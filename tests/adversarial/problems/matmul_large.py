"""A 2048 x 2048 float32 matrix product: a few hundred microseconds on a GPU, far above what a cache that reads a
few elements of its inputs takes there (issue 45, class 3 on GPU targets)."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return a @ b


n = 2048


def get_inputs():
    return [torch.randn(n, n), torch.randn(n, n)]


def get_init_inputs():
    return []
