"""MergeBucketizedDense: bucketize every dense feature by its own short border list, into one output
(KernelEvolve paper: 9.25x over PyTorch).

Inputs:
- ``x``: float32 [BATCH, FEATURES], the dense features of a batch (batch-major, as a ranking model holds them);
- ``borders``: float32 [FEATURES, BORDERS], feature f's border list in row f, sorted ascending (ties allowed); only
  its first ``lengths[f]`` entries are used, the rest of the row is padding (also sorted, never read);
- ``lengths``: int64 [FEATURES], each in [min(3, BORDERS), BORDERS]: the paper's short lists of 3-10 borders.

Output: int64 [BATCH, FEATURES], all features merged into one tensor:

    y[i, f] = min{k : x[i, f] < B_f[k]}  (= lengths[f] when there is no such k),  B_f = borders[f, :lengths[f]]
            = #{k < lengths[f] : B_f[k] <= x[i, f]}

which is ``torch.bucketize(x[:, f], B_f, right=True)``: a value equal to a border goes to the bucket above it
(the paper's Y[f, i], stored batch-major). The reference is the per-feature loop a ranking engineer writes:
``torch.bucketize`` over views of the one borders tensor, one launch (and one host read of lengths[f]) per feature.

Shapes: (BATCH, FEATURES, BORDERS); the paper's example is 2048 x 2 x 4.
"""

import torch
import torch.nn as nn

BATCH = 2048
FEATURES = 2
BORDERS = 4

SHAPE_CASES = [
    {"BATCH": 2048, "FEATURES": 2, "BORDERS": 4},  # primary: the paper's shape, launch-bound
    {"BATCH": 8192, "FEATURES": 16, "BORDERS": 10},
    {"BATCH": 65536, "FEATURES": 32, "BORDERS": 10},  # 8 MB in, 16 MB out: bandwidth-bound
    {"BATCH": 4096, "FEATURES": 13, "BORDERS": 7},  # nothing a power of two
    {"BATCH": 16384, "FEATURES": 8, "BORDERS": 128},  # out of distribution: long border lists
]

# The speedup over eager `kernelevolve bench` checks on one shape case.
TARGET_SPEEDUP = {"speedup": 9.0, "case": 0, "note": "KernelEvolve paper: MergeBucketizedDense 9.25x (rounded to 9x)"}

# x is redrawn from every distribution. borders is sorted along its last dimension, so the harness's redraws keep
# every row sorted; lengths is an integer input and kept as get_inputs makes it.


class Model(nn.Module):
    """y[:, f] = torch.bucketize(x[:, f], borders[f, :lengths[f]], right=True), one feature at a time."""

    def forward(self, x: torch.Tensor, borders: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
        out = torch.empty(x.shape, dtype=torch.int64, device=x.device)
        for f, n in enumerate(lengths.tolist()):
            out[:, f] = torch.bucketize(x[:, f].contiguous(), borders[f, :n], right=True)
        return out


def get_inputs():
    x = torch.randn(BATCH, FEATURES)
    # Each feature's borders span a different range, so each is checked against its own list; about a
    # fifth of the borders are exact copies of one x value, to exercise ties (right=True).
    spread = torch.rand(FEATURES, 1) * 2 + 0.5
    borders = torch.sort(torch.randn(FEATURES, BORDERS), dim=1).values * spread + torch.randn(FEATURES, 1) * 0.5
    tie = torch.rand(FEATURES, BORDERS) < 0.2
    borders = torch.where(
        tie, x[torch.randint(0, BATCH, (FEATURES, BORDERS)), torch.arange(FEATURES)[:, None]], borders
    )
    borders = torch.sort(borders, dim=1).values
    lengths = torch.randint(min(3, BORDERS), BORDERS + 1, (FEATURES,))
    return [x, borders, lengths]


def get_init_inputs():
    return []
