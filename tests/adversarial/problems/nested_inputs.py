"""Inputs nested in lists and a dict, as a jagged operator's per-feature tensors come: y = a + b * w."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, pairs, named):
        return pairs[0][0] + pairs[1][0] * named["w"]


def get_inputs():
    return [[[torch.randn(256)], [torch.randn(256)]], {"w": torch.randn(256)}]


def get_init_inputs():
    return []
