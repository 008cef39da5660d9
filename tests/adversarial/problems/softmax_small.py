"""Row softmax, small enough for the adversarial suite: two shape cases, one width not a power of two."""

import torch
import torch.nn as nn

ROWS = 64
COLS = 1000
SHAPE_CASES = [{"ROWS": 64, "COLS": 1000}, {"ROWS": 33, "COLS": 128}]


class Model(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.softmax(x, dim=-1)


def get_inputs():
    return [torch.randn(ROWS, COLS)]


def get_init_inputs():
    return []
