"""Jagged sum: the sum of every segment of a jagged tensor (sum pooling of a jagged embedding batch, the core
of an embedding bag once the rows are gathered).

Inputs: ``values`` float32 [TOTAL, DIM] (the rows of all segments back to back) and ``offsets`` int64 [BATCH + 1],
ascending, offsets[0] = 0 and offsets[-1] = TOTAL: segment b is rows offsets[b]:offsets[b + 1]. Lengths are
uniform in [0, 2 * MEAN_LEN], so some segments are empty (their sum is 0).

Output: float32 [BATCH, DIM], out[b] = values[offsets[b]:offsets[b + 1]].sum(0).

The reference is the PyTorch a ranking engineer writes without fbgemm: segment ids by repeat_interleave, then
index_add_ into zeros.

Shapes: (BATCH, MEAN_LEN, DIM), embedding dimensions 64-256.
"""

import torch
import torch.nn as nn

BATCH = 4096
MEAN_LEN = 50
DIM = 128

SHAPE_CASES = [
    {"BATCH": 4096, "MEAN_LEN": 50, "DIM": 128},  # primary
    {"BATCH": 2048, "MEAN_LEN": 100, "DIM": 64},
    {"BATCH": 8192, "MEAN_LEN": 20, "DIM": 256},
    {"BATCH": 3000, "MEAN_LEN": 30, "DIM": 96},  # nothing a power of two
    {"BATCH": 64, "MEAN_LEN": 2000, "DIM": 128},  # out of distribution: few, long segments (up to 4000 rows)
]

# Sums of up to 4000 rows: fp32 sums in another order (the Triton seed's blocked sum against PyTorch's sequential
# index_add_) differ by up to 5e-4 at the paper's shapes and 8e-3 on the long segments at x100 ("large") inputs
# (measured); atol 5e-2 covers that with room for other orders (GPU atomics), and stays far below what dropping
# or repeating one row changes (|row| ~ 1 per element at unit scale, over DIM elements).
TOLERANCE = {"atol": 5e-2, "rtol": 1e-4}


class Model(nn.Module):
    def forward(self, values: torch.Tensor, offsets: torch.Tensor) -> torch.Tensor:
        lengths = offsets[1:] - offsets[:-1]
        batch = lengths.numel()
        segment = torch.repeat_interleave(
            torch.arange(batch, device=values.device), lengths, output_size=values.shape[0]
        )
        out = torch.zeros(batch, values.shape[1], dtype=values.dtype, device=values.device)
        return out.index_add_(0, segment, values)


def get_inputs():
    lengths = torch.randint(0, 2 * MEAN_LEN + 1, (BATCH,))
    offsets = torch.cat([torch.zeros(1, dtype=torch.int64), torch.cumsum(lengths, 0)])
    return [torch.randn(int(offsets[-1]), DIM), offsets]


def get_init_inputs():
    return []
