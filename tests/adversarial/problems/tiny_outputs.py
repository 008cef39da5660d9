"""Every output is far below the default atol (1e-4): under a fixed tolerance the elementwise test alone would
accept all zeros, and check-problem flags it (test_check_problem.py adds the TOLERANCE); the measured rule scales
with the outputs and judges it as any other problem."""

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
