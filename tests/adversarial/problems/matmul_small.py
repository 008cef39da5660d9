"""A 384 x 384 float32 matrix product: about a millisecond on a CPU, while a cache that reads a few elements of
its inputs answers in microseconds (issue 45, class 3: timed calls told apart and served from a cache)."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return a @ b


n = 384


def get_inputs():
    return [torch.randn(n, n), torch.randn(n, n)]


def get_init_inputs():
    return []
