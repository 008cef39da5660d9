"""A jagged sum large enough that a call on a GPU is work well beyond the unseen-inputs check's slack (a call of a
few microseconds is within it): out[b] = values[offsets[b]:offsets[b + 1]].sum(0), about 34M values a set."""

import torch
import torch.nn as nn

BATCH = 4096
MEAN_LEN = 32
DIM = 256


class Model(nn.Module):
    def forward(self, values, offsets):
        lengths = offsets[1:] - offsets[:-1]
        batch = torch.arange(lengths.numel(), device=values.device)
        segment = torch.repeat_interleave(batch, lengths, output_size=values.shape[0])
        out = torch.zeros(lengths.numel(), values.shape[1], dtype=values.dtype, device=values.device)
        return out.index_add_(0, segment, values)


def get_inputs():
    lengths = torch.randint(0, 2 * MEAN_LEN + 1, (BATCH,))
    offsets = torch.cat([torch.zeros(1, dtype=torch.int64), torch.cumsum(lengths, 0)])
    return [torch.randn(int(offsets[-1]), DIM), offsets]


def get_init_inputs():
    return []
