"""Jagged truncate: keep at most MAX_LEN leading elements of every segment of a jagged tensor.

A jagged tensor is (values, offsets): segment b is values[offsets[b]:offsets[b + 1]], offsets int64 with
offsets[0] = 0. Returns (new_values, new_offsets) for the truncated segments. The output length depends on
the data. KernelBench-format problem: Model, get_inputs(), get_init_inputs(), plus SHAPE_CASES.
"""

import torch
import torch.nn as nn

SEGMENTS = 1024
MAX_LEN = 50

SHAPE_CASES = [
    {"SEGMENTS": 1024, "MAX_LEN": 50},  # primary: about half the segments are truncated
    {"SEGMENTS": 300, "MAX_LEN": 200},  # long segments, MAX_LEN not a power of two
]


class Model(nn.Module):
    def __init__(self, max_len: int):
        super().__init__()
        self.max_len = max_len

    def forward(self, values: torch.Tensor, offsets: torch.Tensor):
        lengths = offsets[1:] - offsets[:-1]
        new_offsets = torch.zeros_like(offsets)
        new_offsets[1:] = torch.cumsum(lengths.clamp(max=self.max_len), dim=0)
        segment = torch.repeat_interleave(torch.arange(lengths.numel(), device=values.device), lengths)
        position = torch.arange(values.numel(), device=values.device) - offsets[:-1][segment]
        return values[position < self.max_len], new_offsets


def get_inputs():
    # Lengths 0 .. 2 * MAX_LEN (empty segments included); integer inputs are kept as drawn.
    lengths = torch.randint(0, 2 * MAX_LEN + 1, (SEGMENTS,))
    offsets = torch.zeros(SEGMENTS + 1, dtype=torch.int64)
    offsets[1:] = torch.cumsum(lengths, dim=0)
    values = torch.randn(int(offsets[-1]))
    return [values, offsets]


def get_init_inputs():
    return [MAX_LEN]
