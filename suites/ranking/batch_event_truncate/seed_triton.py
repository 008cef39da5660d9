"""Triton seed for batch_event_truncate: all features truncated at once, no host synchronisation.

Technique: every (feature, sample) sequence is one segment, and all FEATURES x BATCH segments are handled
together, so the per-feature loop, its host reads of sizes and its boolean-mask compactions disappear. The kept
events of a sequence are its first max_len, so what a segment keeps is a contiguous prefix of its inner lengths
and a contiguous prefix of its values: truncation is a set of variable-length block copies at offsets from two
scans.
1. ``_scan_events`` (one program): truncated lengths min(outer, max_len[f]) and the exclusive scans of the input
   and output event counts (where each segment's events start, in and out), block by block with a running carry.
2. ``_count_values`` (one program per segment): the segment's value count and kept value count (sum of its inner
   lengths, all and the first max_len).
3. ``_scan_values`` (one program): exclusive scans of those: where each segment's values start, in and out.
4. ``_copy_segments`` (one program per segment): the kept inner lengths and values, contiguous loads and stores.
5. ``_zero_tails``: the fill of both output tails, reading the totals from device memory.
Outputs have the inputs' sizes, so nothing is read back to the host and the whole op is capturable in a graph.

Expected bottleneck: the two single-program scans (serial over FEATURES x BATCH / SCAN_BLOCK blocks) and launch
overhead at small batches; memory bandwidth of the copies (values dominate) at large ones.
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl

# Launch parameters; a tuner re-binds these module constants (values from TUNABLES).
SCAN_BLOCK = 1024  # segments per step of the scans
EVENT_BLOCK = 128  # events per step of the per-segment loops
VALUE_BLOCK = 256  # values per step of the per-segment copy
FILL_BLOCK = 1024
NUM_WARPS = 4

TUNABLES = {
    "SCAN_BLOCK": [256, 512, 1024, 2048, 4096],
    "EVENT_BLOCK": [32, 64, 128, 256],
    "VALUE_BLOCK": [64, 128, 256, 512, 1024],
    "FILL_BLOCK": [512, 1024, 2048, 4096],
    "NUM_WARPS": [1, 2, 4, 8],
}


@triton.jit
def _scan_events(
    outer_ptr, max_len_ptr, trunc_ptr, ev_in_ptr, ev_out_ptr, totals_ptr, n_seg, n_batch, BLOCK: tl.constexpr
):
    carry_in = tl.sum(tl.zeros([BLOCK], dtype=tl.int64), axis=0)
    carry_out = carry_in
    for s0 in range(0, n_seg, BLOCK):
        s = s0 + tl.arange(0, BLOCK)
        ok = s < n_seg
        outer = tl.load(outer_ptr + s, mask=ok, other=0)
        max_len = tl.load(max_len_ptr + s // n_batch, mask=ok, other=0)
        trunc = tl.minimum(outer, max_len)
        tl.store(trunc_ptr + s, trunc, mask=ok)
        tl.store(ev_in_ptr + s, carry_in + tl.cumsum(outer, axis=0) - outer, mask=ok)
        tl.store(ev_out_ptr + s, carry_out + tl.cumsum(trunc, axis=0) - trunc, mask=ok)
        carry_in += tl.sum(outer, axis=0)
        carry_out += tl.sum(trunc, axis=0)
    tl.store(totals_ptr, carry_out)


@triton.jit
def _count_values(inner_ptr, outer_ptr, trunc_ptr, ev_in_ptr, seg_vals_ptr, seg_kept_ptr, BLOCK: tl.constexpr):
    s = tl.program_id(0)
    start = tl.load(ev_in_ptr + s)
    n = tl.load(outer_ptr + s)
    keep = tl.load(trunc_ptr + s)
    total = tl.zeros([BLOCK], dtype=tl.int64)
    kept = tl.zeros([BLOCK], dtype=tl.int64)
    for e0 in range(0, n, BLOCK):
        e = e0 + tl.arange(0, BLOCK)
        v = tl.load(inner_ptr + start + e, mask=e < n, other=0)
        total += v
        kept += tl.where(e < keep, v, 0)
    tl.store(seg_vals_ptr + s, tl.sum(total, axis=0))
    tl.store(seg_kept_ptr + s, tl.sum(kept, axis=0))


@triton.jit
def _scan_values(seg_vals_ptr, seg_kept_ptr, val_in_ptr, val_out_ptr, totals_ptr, n_seg, BLOCK: tl.constexpr):
    carry_in = tl.sum(tl.zeros([BLOCK], dtype=tl.int64), axis=0)
    carry_out = carry_in
    for s0 in range(0, n_seg, BLOCK):
        s = s0 + tl.arange(0, BLOCK)
        ok = s < n_seg
        total = tl.load(seg_vals_ptr + s, mask=ok, other=0)
        kept = tl.load(seg_kept_ptr + s, mask=ok, other=0)
        tl.store(val_in_ptr + s, carry_in + tl.cumsum(total, axis=0) - total, mask=ok)
        tl.store(val_out_ptr + s, carry_out + tl.cumsum(kept, axis=0) - kept, mask=ok)
        carry_in += tl.sum(total, axis=0)
        carry_out += tl.sum(kept, axis=0)
    tl.store(totals_ptr + 1, carry_out)


@triton.jit
def _copy_segments(
    inner_ptr,
    values_ptr,
    out_inner_ptr,
    out_values_ptr,
    trunc_ptr,
    ev_in_ptr,
    ev_out_ptr,
    seg_kept_ptr,
    val_in_ptr,
    val_out_ptr,
    EVENT_BLOCK: tl.constexpr,
    VALUE_BLOCK: tl.constexpr,
):
    s = tl.program_id(0)
    keep = tl.load(trunc_ptr + s)
    src = tl.load(ev_in_ptr + s)
    dst = tl.load(ev_out_ptr + s)
    for e0 in range(0, keep, EVENT_BLOCK):
        e = e0 + tl.arange(0, EVENT_BLOCK)
        ok = e < keep
        tl.store(out_inner_ptr + dst + e, tl.load(inner_ptr + src + e, mask=ok), mask=ok)
    n_vals = tl.load(seg_kept_ptr + s)
    src = tl.load(val_in_ptr + s)
    dst = tl.load(val_out_ptr + s)
    for i0 in range(0, n_vals, VALUE_BLOCK):
        i = i0 + tl.arange(0, VALUE_BLOCK)
        ok = i < n_vals
        tl.store(out_values_ptr + dst + i, tl.load(values_ptr + src + i, mask=ok), mask=ok)


@triton.jit
def _zero_tails(out_inner_ptr, out_values_ptr, totals_ptr, n_events, n_values, BLOCK: tl.constexpr):
    i = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    kept_events = tl.load(totals_ptr)
    kept_values = tl.load(totals_ptr + 1)
    zero = tl.zeros([BLOCK], dtype=tl.int64)
    tl.store(out_inner_ptr + i, zero, mask=(i >= kept_events) & (i < n_events))
    tl.store(out_values_ptr + i, zero, mask=(i >= kept_values) & (i < n_values))


class ModelNew(nn.Module):
    def forward(
        self,
        outer_lengths: torch.Tensor,
        inner_lengths: torch.Tensor,
        values: torch.Tensor,
        max_lengths: torch.Tensor,
    ):
        outer = outer_lengths.contiguous()
        inner = inner_lengths.contiguous()
        values = values.contiguous()
        max_lengths = max_lengths.contiguous()
        n_feat, n_batch = outer.shape
        n_seg, n_events, n_values = outer.numel(), inner.numel(), values.numel()
        out_outer = torch.empty_like(outer)
        out_inner = torch.empty_like(inner)
        out_values = torch.empty_like(values)
        if n_seg == 0:
            return out_outer, out_inner, out_values
        # Per segment: event start in / out, value count, kept value count, value start in / out.
        work = torch.empty((6, n_seg), dtype=torch.int64, device=outer.device)
        ev_in, ev_out, seg_vals, seg_kept, val_in, val_out = work.unbind(0)
        totals = torch.empty(2, dtype=torch.int64, device=outer.device)  # kept events, kept values

        _scan_events[(1,)](
            outer, max_lengths, out_outer, ev_in, ev_out, totals, n_seg, n_batch, BLOCK=SCAN_BLOCK, num_warps=NUM_WARPS
        )
        _count_values[(n_seg,)](
            inner, outer, out_outer, ev_in, seg_vals, seg_kept, BLOCK=EVENT_BLOCK, num_warps=NUM_WARPS
        )
        _scan_values[(1,)](seg_vals, seg_kept, val_in, val_out, totals, n_seg, BLOCK=SCAN_BLOCK, num_warps=NUM_WARPS)
        _copy_segments[(n_seg,)](
            inner,
            values,
            out_inner,
            out_values,
            out_outer,
            ev_in,
            ev_out,
            seg_kept,
            val_in,
            val_out,
            EVENT_BLOCK=EVENT_BLOCK,
            VALUE_BLOCK=VALUE_BLOCK,
            num_warps=NUM_WARPS,
        )
        n_fill = max(n_events, n_values)
        if n_fill:
            _zero_tails[(triton.cdiv(n_fill, FILL_BLOCK),)](
                out_inner, out_values, totals, n_events, n_values, BLOCK=FILL_BLOCK, num_warps=NUM_WARPS
            )
        return out_outer, out_inner, out_values
