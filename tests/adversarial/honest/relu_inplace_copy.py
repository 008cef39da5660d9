"""PyTorch rewrite: in place, but on its own copy of the input."""

import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, x):
        y = x.clone()
        y.clamp_min_(0.0)
        return y
