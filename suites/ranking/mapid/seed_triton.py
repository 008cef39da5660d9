"""Triton seed for mapid: a branch-free k-ary lower_bound, fewer dependent round trips than binary search.

Technique: one program per BLOCK ids. Each lane clamps its id, then narrows the answer of lower_bound (the first j
with table[j] >= x; j may equal TABLE) from TABLE + 1 candidates to one in rounds of FANOUT-way splits. The
interval's width m is the same for every lane (a scalar), only its start lo is per lane: a round probes the FANOUT-1
split points lo + k*s - 1, s = ceil(m / FANOUT), as one [BLOCK, FANOUT] gather (all loads of a round are
independent and in flight together), counts the probes below x (a prefix, the table being sorted), moves lo by that
many steps of s and sets m = s. Probes at or past the interval's end are masked off (they cannot be below x), as are
probes past the table, so the last rounds load fewer entries. At 100k known ids FANOUT 4 takes 9 rounds of 3 probes
(FANOUT 16: 5 rounds of 15) where the binary search takes 17 dependent probes. The first round probes the same
entries in every lane (broadcast loads, L1/L2 hits), and so, across the grid, do most probes of the second. The
final lo is the answer: one more gather of table and remap (independent of each other) and both checks, fused; the
only writes are the int64 results.

Expected bottleneck: the latency of the dependent gathers, now ceil(log_FANOUT(TABLE + 1)) rounds instead of
ceil(log2(TABLE)) probes, plus launch overhead at 2k ids; issue slots and L1 request throughput for large
FANOUT (FANOUT - 1 loads per id per round) at the largest batches; L2 bandwidth for maps larger than L2.

It replaced a binary search, one dependent gather per probe. The defaults (BLOCK 64, FANOUT 4, 2 warps) are a
tune search's best: FANOUT 16 has fewer rounds but issues 15 loads per id in each, so the load issue per round,
not only the number of rounds, sets the time. Measurements: docs/benchmarks/ranking.md.
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl

# Launch parameters; a tuner re-binds these module constants (values from TUNABLES).
BLOCK = 64
FANOUT = 4
NUM_WARPS = 2

TUNABLES = {
    # 64 ids per program: 256 programs at 16k ids, about two per SM of the H200's 132, so the gathers of a round
    # spread over every SM's load units. A round holds BLOCK * FANOUT int64 probes, BLOCK * FANOUT / (32 *
    # NUM_WARPS) per thread (4 at the defaults); large blocks and fanouts on few warps spill registers.
    "BLOCK": [32, 64, 128, 256, 512, 1024],
    "FANOUT": [4, 8, 16, 32],
    "NUM_WARPS": [1, 2, 4, 8],
}

# Interpreter only (TRITON_INTERPRET=1 on the CPU): every program costs milliseconds of Python, so there one
# program takes up to this many ids. Same kernel, same results.
_INTERPRETER_BLOCK = 1 << 16

# Positions and probe offsets are int32: a probe offset stays below 2 * TABLE + FANOUT + 1 (see the kernel).
_MAX_TABLE = 2**30 - 1024


@triton.jit(do_not_specialize=["n_ids", "table_size", "n_rounds"])
def _mapid_kary_kernel(
    ids_ptr,
    table_ptr,
    remap_ptr,
    out_ptr,
    n_ids,
    table_size,
    n_rounds,
    max_raw_id,
    default_id,
    BLOCK: tl.constexpr,
    FANOUT: tl.constexpr,
):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n_ids
    raw = tl.load(ids_ptr + offs, mask=mask, other=0)
    x = tl.minimum(tl.maximum(raw, 0), max_raw_id)  # 1. clamp

    # 2. lower_bound. Invariant: the answer lies in [lo, lo + m - 1], m the same for every lane (the interval may
    # reach past table_size: those positions count as +inf). With s = ceil(m / FANOUT) the probes p_k = lo + k*s - 1
    # (k = 1 .. FANOUT - 1) are below the answer exactly when table[p_k] < x, so they form a prefix of c probes:
    # lo + c*s <= answer, and answer <= lo + (c+1)*s - 1 (probe c+1 is not below x, or c = FANOUT - 1 and the end
    # lo + m - 1 <= lo + FANOUT*s - 1). Masked off, as not below x: probes past the table, and probes with
    # k*s >= m, at or past the interval's end lo + m - 1 >= answer (the last rounds load fewer entries). k runs
    # over 1 .. FANOUT, a power of two; k = FANOUT is always masked (FANOUT*s >= m).
    k = tl.arange(0, FANOUT) + 1
    lo = tl.zeros([BLOCK], dtype=tl.int32)
    m = table_size + 1
    for _ in range(n_rounds):
        s = (m + FANOUT - 1) // FANOUT
        ks = k * s  # < m + FANOUT, and lo <= table_size: offsets stay below 2 * table_size + FANOUT + 1
        at = lo[:, None] + ks[None, :] - 1
        live = mask[:, None] & (ks < m)[None, :] & (at < table_size)
        probe = tl.load(table_ptr + at, mask=live, other=0)
        below = live & (probe < x[:, None])
        lo = lo + tl.sum(below.to(tl.int32), axis=1) * s
        m = s
    pos = tl.minimum(lo, table_size - 1)  # m == 1: lo is the answer; table_size means past the last entry

    hit = tl.load(table_ptr + pos, mask=mask, other=0)
    cand = tl.load(remap_ptr + pos, mask=mask, other=0)  # 2. gather
    valid = (hit == x) & (cand >= 0)  # 3. unknown ids, 4. validity check
    tl.store(out_ptr + offs, tl.where(valid, cand, default_id), mask=mask)


def _rounds(table_size: int, fanout: int) -> int:
    """Rounds of m = ceil(m / fanout) that bring m = table_size + 1 candidates down to one."""
    m, rounds = table_size + 1, 0
    while m > 1:
        m, rounds = -(-m // fanout), rounds + 1
    return rounds


class ModelNew(nn.Module):
    def __init__(self, max_raw_id: int, default_id: int):
        super().__init__()
        self.max_raw_id = max_raw_id
        self.default_id = default_id

    def forward(self, ids: torch.Tensor, table: torch.Tensor, remap: torch.Tensor) -> torch.Tensor:
        ids, table, remap = ids.contiguous(), table.contiguous(), remap.contiguous()
        n, t = ids.numel(), table.numel()
        assert t >= 1 and remap.numel() == t, "mapid: one remap entry per table entry"
        assert t < _MAX_TABLE, "mapid: int32 positions"
        assert FANOUT >= 2 and FANOUT & (FANOUT - 1) == 0, "mapid: FANOUT is a power of two"
        out = torch.empty_like(ids)
        if n == 0:
            return out
        block = BLOCK if ids.is_cuda else max(BLOCK, min(triton.next_power_of_2(n), _INTERPRETER_BLOCK))
        _mapid_kary_kernel[(triton.cdiv(n, block),)](
            ids,
            table,
            remap,
            out,
            n,
            t,
            _rounds(t, FANOUT),
            self.max_raw_id,
            self.default_id,
            BLOCK=block,
            FANOUT=FANOUT,
            num_warps=NUM_WARPS,
        )
        return out
