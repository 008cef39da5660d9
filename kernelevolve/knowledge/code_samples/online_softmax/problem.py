"""Row softmax over rows too long for one tile: y = softmax(x, dim=-1), x of shape [BATCH, DIM], float32.

KernelBench-format problem: Model, get_inputs(), get_init_inputs(), plus SHAPE_CASES.
"""

import torch
import torch.nn as nn

BATCH = 64
DIM = 16384

SHAPE_CASES = [
    {"BATCH": 64, "DIM": 16384},  # primary: long power-of-two rows
    {"BATCH": 37, "DIM": 30000},  # odd row count, DIM not a multiple of any block
]


class Model(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.softmax(x, dim=-1)


def get_inputs():
    return [torch.randn(BATCH, DIM)]


def get_init_inputs():
    return []
