import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, pairs, named):
        return torch.addcmul(pairs[0][0], pairs[1][0], named["w"])
