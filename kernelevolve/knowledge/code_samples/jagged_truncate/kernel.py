"""Jagged truncate (Triton): new offsets by a prefix sum, then a segment-parallel gather.

1. One program scans the segments in BLOCK_S chunks: new_len = min(len, max_len), an inclusive
   tl.cumsum per chunk plus a running carry gives new_offsets[1:] (int64 throughout).
2. The host reads new_offsets[-1] (the output length: data-dependent, one device sync) and allocates.
3. Each gather program copies BLOCK_SEG segments: a [BLOCK_SEG, BLOCK_L] tile of (segment, position)
   pairs, masked by position < new_len, reading values[src_start + j] and writing out[dst_start + j].
   Segments longer than BLOCK_L take several passes of the inner loop.
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl

BLOCK_S = 1024  # segments per scan step
BLOCK_SEG = 4  # segments per gather program (GPU)
BLOCK_L = 128  # positions per gather step (GPU)
NUM_WARPS = 4

TUNABLES = {
    "BLOCK_S": [256, 1024, 4096],
    "BLOCK_SEG": [1, 2, 4, 8, 16],
    "BLOCK_L": [32, 64, 128, 256],
    "NUM_WARPS": [1, 2, 4, 8],
}

_INTERPRETER_BLOCK_SEG = 256  # CPU interpreter only: few, large programs


@triton.jit
def _truncated_offsets_kernel(offsets_ptr, new_offsets_ptr, n_segments, max_len, BLOCK_S: tl.constexpr):
    idx = tl.arange(0, BLOCK_S)
    tl.store(new_offsets_ptr + idx, tl.zeros((BLOCK_S,), dtype=tl.int64), mask=idx == 0)  # new_offsets[0] = 0
    carry = tl.zeros((1,), dtype=tl.int64)  # a [1] tensor: loop-carried values keep one type and shape
    for start in range(0, n_segments, BLOCK_S):
        i = start + idx
        ok = i < n_segments
        lo = tl.load(offsets_ptr + i, mask=ok, other=0)
        hi = tl.load(offsets_ptr + i + 1, mask=ok, other=0)
        new_len = tl.minimum(hi - lo, max_len)
        tl.store(new_offsets_ptr + i + 1, tl.cumsum(new_len, axis=0) + carry, mask=ok)
        carry += tl.sum(new_len, axis=0)


@triton.jit
def _truncate_gather_kernel(
    values_ptr,
    offsets_ptr,
    new_offsets_ptr,
    out_ptr,
    n_segments,
    max_len,
    BLOCK_SEG: tl.constexpr,
    BLOCK_L: tl.constexpr,
):
    seg = tl.program_id(0) * BLOCK_SEG + tl.arange(0, BLOCK_SEG)
    seg_ok = seg < n_segments
    src = tl.load(offsets_ptr + seg, mask=seg_ok, other=0)
    dst = tl.load(new_offsets_ptr + seg, mask=seg_ok, other=0)
    n_keep = tl.load(new_offsets_ptr + seg + 1, mask=seg_ok, other=0) - dst  # 0 for masked segments
    j = tl.arange(0, BLOCK_L)
    for j0 in range(0, max_len, BLOCK_L):
        pos = j0 + j
        keep = pos[None, :] < n_keep[:, None]
        v = tl.load(values_ptr + src[:, None] + pos[None, :], mask=keep)
        tl.store(out_ptr + dst[:, None] + pos[None, :], v, mask=keep)


class ModelNew(nn.Module):
    def __init__(self, max_len: int):
        super().__init__()
        self.max_len = max_len

    def forward(self, values: torch.Tensor, offsets: torch.Tensor):
        values = values.contiguous()
        offsets = offsets.contiguous()
        n_segments = offsets.numel() - 1
        new_offsets = torch.empty_like(offsets)
        _truncated_offsets_kernel[(1,)](offsets, new_offsets, n_segments, self.max_len, BLOCK_S=BLOCK_S)
        total = int(new_offsets[n_segments].item())  # data-dependent output size: one sync
        out = torch.empty(total, dtype=values.dtype, device=values.device)
        if total == 0:
            return out, new_offsets
        if values.is_cuda:
            block_seg, block_l = BLOCK_SEG, BLOCK_L
        else:
            block_seg, block_l = _INTERPRETER_BLOCK_SEG, triton.next_power_of_2(self.max_len)
        _truncate_gather_kernel[(triton.cdiv(n_segments, block_seg),)](
            values,
            offsets,
            new_offsets,
            out,
            n_segments,
            self.max_len,
            BLOCK_SEG=block_seg,
            BLOCK_L=block_l,
            num_warps=NUM_WARPS,
        )
        return out, new_offsets
