"""PyTorch rewrite: allocates its output uninitialised and fills every element (poisoning must not mind)."""

import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, x):
        out = torch.empty_like(x)
        torch.clamp_min(x, 0.0, out=out)
        return out
