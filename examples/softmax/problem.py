"""Reference problem: row-wise softmax over the last dim of a 2-D float32 tensor.

KernelBench-compatible problem file: ``Model``, ``get_inputs()`` and ``get_init_inputs()``,
plus the optional ``SHAPE_CASES`` / ``DTYPE`` extensions.
"""

import torch
import torch.nn as nn

# Size constants; the harness re-binds them for each entry of SHAPE_CASES.
BATCH = 4096
DIM = 4096

SHAPE_CASES = [
    {"BATCH": 4096, "DIM": 4096},  # primary: 64 MiB in + 64 MiB out
    {"BATCH": 2048, "DIM": 1000},  # narrow rows, DIM not a power of two
    {"BATCH": 256, "DIM": 3000},  # few rows, DIM not a power of two
]

DTYPE = torch.float32


class Model(nn.Module):
    """y = softmax(x, dim=-1)."""

    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.softmax(x, dim=-1)


def get_inputs():
    # Read the module constants at call time so SHAPE_CASES re-binding takes effect.
    return [torch.randn(BATCH, DIM)]


def get_init_inputs():
    return []
