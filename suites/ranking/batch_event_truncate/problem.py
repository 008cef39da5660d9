"""Batch Event Truncate: truncate every event sequence of several nested jagged features at once
(KernelEvolve paper: 9.8x over PyTorch, 14.5x at 32 features).

Each of FEATURES event features holds, for each of BATCH samples, a sequence of events (most recent first), and
each event a list of values (ids). The three levels are flat tensors, features concatenated in order:

- ``outer_lengths``: int64 [FEATURES, BATCH], the number of events of sample b in feature f (0..EVENTS);
- ``inner_lengths``: int64 [E], E = outer_lengths.sum(): the number of values of every event, ordered by
  feature, then sample, then event;
- ``values``: int64 [V], V = inner_lengths.sum(): the values of every event, in the same order;
- ``max_lengths``: int64 [FEATURES], feature f's truncation length (in [MAX_LEN // 2, MAX_LEN]).

Truncation keeps the first ``max_lengths[f]`` events of every sequence of feature f (with all their values) and
drops the rest. Outputs, all of fixed shape for a given input:

- ``out_outer``: int64 [FEATURES, BATCH] = minimum(outer_lengths, max_lengths[:, None]);
- ``out_inner``: int64 [E]: the kept events' inner lengths, compacted to the front in the input's order; the
  remaining E - out_outer.sum() entries are 0;
- ``out_values``: int64 [V]: the kept events' values, compacted to the front in the input's order; the remaining
  V - out_inner.sum() entries are 0.

The baseline is the per-feature PyTorch loop (jagged positions from cumsum / repeat_interleave, boolean masks,
host reads of the sizes between features).

Shapes: the paper's cases are 1-32 features, 200 events, maximum length 100-200; BATCH samples per call.
"""

import torch
import torch.nn as nn

FEATURES = 8
BATCH = 512
EVENTS = 200  # events per sequence: uniform in [0, EVENTS]
MAX_LEN = 200  # truncation lengths: uniform in [MAX_LEN // 2, MAX_LEN]
INNER = 4  # values per event: uniform in [0, INNER]

SHAPE_CASES = [
    {"FEATURES": 8, "BATCH": 512, "EVENTS": 200, "MAX_LEN": 200},  # primary
    {"FEATURES": 1, "BATCH": 512, "EVENTS": 200, "MAX_LEN": 200},  # one feature: the loop's best case
    {"FEATURES": 32, "BATCH": 512, "EVENTS": 200, "MAX_LEN": 100},  # 32 features (paper: 14.5x)
    {"FEATURES": 13, "BATCH": 300, "EVENTS": 200, "MAX_LEN": 150},  # nothing a power of two
    {"FEATURES": 2, "BATCH": 2048, "EVENTS": 1000, "MAX_LEN": 50},  # out of distribution: long sequences
]

# The speedup over eager `kernelevolve bench` checks on one shape case.
TARGET_SPEEDUP = {"speedup": 9.8, "case": 0, "note": "KernelEvolve paper: 9.8x at 9 features, max length 200"}

# Every input is an integer tensor: the harness keeps integer inputs as get_inputs makes them, so the jagged
# layout's invariants (sizes matching lengths) always hold.


class Model(nn.Module):
    """Per feature: keep the first max_lengths[f] events of every sequence, compact, zero-fill the tails."""

    def forward(
        self,
        outer_lengths: torch.Tensor,
        inner_lengths: torch.Tensor,
        values: torch.Tensor,
        max_lengths: torch.Tensor,
    ):
        device = outer_lengths.device
        out_outer = torch.minimum(outer_lengths, max_lengths[:, None])
        out_inner = torch.zeros_like(inner_lengths)
        out_values = torch.zeros_like(values)
        ev_in = val_in = ev_out = val_out = 0
        for f in range(outer_lengths.shape[0]):
            lengths = outer_lengths[f]
            n_ev = int(lengths.sum())
            inner = inner_lengths[ev_in : ev_in + n_ev]
            n_val = int(inner.sum())
            vals = values[val_in : val_in + n_val]
            # The position of every event inside its own sequence; keep the first max_lengths[f].
            starts = torch.cumsum(lengths, 0) - lengths
            pos = torch.arange(n_ev, device=device) - torch.repeat_interleave(starts, lengths, output_size=n_ev)
            keep_event = pos < max_lengths[f]
            keep_value = torch.repeat_interleave(keep_event, inner, output_size=n_val)
            kept_inner = inner[keep_event]
            kept_vals = vals[keep_value]
            out_inner[ev_out : ev_out + kept_inner.numel()] = kept_inner
            out_values[val_out : val_out + kept_vals.numel()] = kept_vals
            ev_in, val_in = ev_in + n_ev, val_in + n_val
            ev_out, val_out = ev_out + kept_inner.numel(), val_out + kept_vals.numel()
        return out_outer, out_inner, out_values


def get_inputs():
    outer = torch.randint(0, EVENTS + 1, (FEATURES, BATCH))
    inner = torch.randint(0, INNER + 1, (int(outer.sum()),))
    values = torch.randint(1, 1 << 40, (int(inner.sum()),))  # ids; 0 is only ever the fill
    max_lengths = torch.randint(MAX_LEN // 2, MAX_LEN + 1, (FEATURES,))
    return [outer, inner, values, max_lengths]


def get_init_inputs():
    return []
