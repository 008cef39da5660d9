"""Deliberately unsound: every output is far below the default atol (1e-4), so the elementwise test alone
would accept all zeros. check-problem must flag it; the harness's normalised-error check still rejects zeros."""

import torch
import torch.nn as nn

batch_size = 16
dim = 1024


class Model(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x * 1e-6


def get_inputs():
    return [torch.randn(batch_size, dim)]


def get_init_inputs():
    return []
