"""Per-feature bucketize (recommendation-model feature preprocessing).

x [FEATURES, BATCH] float32 values, borders [FEATURES, BORDERS] float32, each row sorted ascending.
out[f, i] = index of the bucket of x[f, i] among borders[f], as torch.bucketize(x[f], borders[f],
right=False) gives it: the number of borders strictly below x[f, i]. Output int64.
KernelBench-format problem: Model, get_inputs(), get_init_inputs(), plus SHAPE_CASES.
"""

import torch
import torch.nn as nn

FEATURES = 8
BATCH = 8192
BORDERS = 16

SHAPE_CASES = [
    {"FEATURES": 8, "BATCH": 8192, "BORDERS": 16},  # primary
    {"FEATURES": 26, "BATCH": 1000, "BORDERS": 100},  # many borders, BATCH not a power of two
]


class Model(nn.Module):
    def forward(self, x: torch.Tensor, borders: torch.Tensor) -> torch.Tensor:
        # searchsorted(sorted, values) == bucketize(values, sorted), batched over the leading dimension.
        return torch.searchsorted(borders, x, right=False)


def get_inputs():
    x = torch.randn(FEATURES, BATCH)
    # Sorted rows stay sorted when the harness redraws them from another distribution.
    borders = torch.sort(torch.randn(FEATURES, BORDERS), dim=1).values
    return [x, borders]


def get_init_inputs():
    return []
