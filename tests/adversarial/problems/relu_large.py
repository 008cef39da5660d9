"""ReLU over 64M float32 elements: 512 MB of traffic, a roofline floor near 0.1 ms on an H200, far above what a
call that skips the work takes (the GPU adversarial suite's roofline case)."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(x)


rows = 16384
cols = 4096


def get_inputs():
    return [torch.randn(rows, cols)]


def get_init_inputs():
    return []
