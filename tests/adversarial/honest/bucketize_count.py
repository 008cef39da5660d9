"""PyTorch rewrite: bucketize by counting the borders at or below each value (integer outputs)."""

import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, x, borders):
        return (borders[:, None, :] <= x[:, :, None]).sum(-1)
