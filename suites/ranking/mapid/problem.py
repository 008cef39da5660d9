"""MapId: remap raw int64 feature ids into a compact id space (KernelEvolve paper: 4.07x over PyTorch).

A sparse feature arrives as raw ids (hashes, item ids: any int64). The embedding table is indexed by compact ids,
so every raw id goes through a map kept as two aligned tensors: ``table`` holds the known raw ids, sorted strictly
ascending, and ``remap[j]`` is the compact id of ``table[j]`` (-1 for a slot that was evicted). In PyTorch the map
is four ops, and the kernel fuses them:

1. clamp: ``x = ids.clamp(0, max_raw_id)`` (negative ids saturate to 0, ids above the range to ``max_raw_id``);
2. sorted lookup and gather: ``pos = searchsorted(table, x)`` (left side: the first j with table[j] >= x), clamped
   to the last slot, then ``cand = remap[pos]``;
3. default for unknown ids: where ``table[pos] != x`` the id is not in the map;
4. validity check: a found id whose compact id is negative (evicted slot) is not valid either.

``out[i] = cand[i]`` where the id is found and valid, else ``default_id``. Output: int64, shape [BATCH], compared
exactly. ``get_inputs`` puts 0 and ``max_raw_id`` in the table, so the clamp decides the answer for negative and
too-large ids, and mixes known, unknown, negative and too-large ids.

Shapes: the paper's batch sizes are 2k-50k ids per call; the map holds TABLE known ids.
"""

import torch
import torch.nn as nn

BATCH = 16384
TABLE = 100_000
MAX_RAW_ID = (1 << 40) - 1

SHAPE_CASES = [
    {"BATCH": 16384, "TABLE": 100_000},  # primary
    {"BATCH": 2048, "TABLE": 100_000},  # the paper's smallest batch: launch-bound
    {"BATCH": 50_000, "TABLE": 100_000},  # the paper's largest batch, not a power of two
    {"BATCH": 50_000, "TABLE": 1000},  # a small map: the whole table stays in L1 / shared memory
    {"BATCH": 1 << 20, "TABLE": 4_000_000},  # out of distribution: 1M ids, a 32 MB map larger than L2
]

# The speedup over eager `kernelevolve bench` checks on one shape case.
TARGET_SPEEDUP = {"speedup": 4.0, "case": 0, "note": "KernelEvolve paper: MapId 4.07x (rounded to 4x)"}

# Every input is an integer tensor: the harness keeps integer inputs as get_inputs makes them (a fresh seed per
# trial), so every distribution is a fresh draw of the same kind of ids.


class Model(nn.Module):
    """out = where(found & remap[pos] >= 0, remap[pos], default_id), pos = searchsorted(table, clamp(ids))."""

    def __init__(self, max_raw_id: int, default_id: int):
        super().__init__()
        self.max_raw_id = max_raw_id
        self.default_id = default_id

    def forward(self, ids: torch.Tensor, table: torch.Tensor, remap: torch.Tensor) -> torch.Tensor:
        x = ids.clamp(0, self.max_raw_id)  # 1. clamp
        pos = torch.searchsorted(table, x).clamp_(max=table.numel() - 1)  # 2. sorted lookup
        cand = remap[pos]  # 2. gather
        found = table[pos] == x  # 3. unknown ids
        valid = found & (cand >= 0)  # 4. validity check
        return torch.where(valid, cand, torch.full_like(cand, self.default_id))


def get_inputs():
    # Known raw ids: strictly ascending from 0 to MAX_RAW_ID, random gaps in between.
    gap = max(1, MAX_RAW_ID // TABLE)
    inner = torch.cumsum(torch.randint(1, gap + 1, (TABLE - 2,), dtype=torch.int64), 0)
    table = torch.cat([torch.zeros(1, dtype=torch.int64), inner, torch.full((1,), MAX_RAW_ID, dtype=torch.int64)])
    # Compact ids: a permutation of the table's slots, ~5% evicted (-1).
    remap = torch.randperm(TABLE, dtype=torch.int64)
    remap[torch.rand(TABLE) < 0.05] = -1
    # Queries: 60% known ids, 25% random raw ids (almost all unknown), 10% negative, 5% above MAX_RAW_ID.
    known = table[torch.randint(0, TABLE, (BATCH,))]
    unknown = torch.randint(0, MAX_RAW_ID, (BATCH,), dtype=torch.int64)
    negative = -torch.randint(1, 1 << 40, (BATCH,), dtype=torch.int64)
    too_large = MAX_RAW_ID + torch.randint(1, 1 << 40, (BATCH,), dtype=torch.int64)
    kind = torch.rand(BATCH)
    ids = torch.where(kind < 0.60, known, unknown)
    ids = torch.where((kind >= 0.85) & (kind < 0.95), negative, ids)
    ids = torch.where(kind >= 0.95, too_large, ids)
    return [ids, table, remap]


def get_init_inputs():
    return [MAX_RAW_ID, TABLE]  # default id: TABLE, one past the compact ids (the "unknown" embedding row)
