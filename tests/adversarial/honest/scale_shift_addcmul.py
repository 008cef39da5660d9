"""PyTorch rewrite: x * weight + 1 as one fused addcmul."""

import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, cols: int):
        super().__init__()
        self.weight = nn.Parameter(torch.empty(cols))

    def forward(self, x):
        return torch.addcmul(torch.ones_like(x), x, self.weight)
