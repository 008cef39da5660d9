"""Sanity bounds on measured times (GPU targets): faster than the hardware allows, or work done where the timed
events cannot see it. And a review flag for speedups large enough to deserve a human look on any target.
"""

from __future__ import annotations

from typing import Any

import torch
from torch.utils._pytree import tree_flatten

from kernelevolve.eval.result import CaseResult
from kernelevolve.platforms.peaks import Peaks

# Reject below half the roofline time: the bound counts every byte once at peak bandwidth, and an output that
# fits in L2 may be only partly written back when the end event fires, so an honest kernel can measure up to
# ~2x under it, never more.
ROOFLINE_SLACK = 0.5
REVIEW_SPEEDUP = 10.0
# Host-clock cross-check: the candidate's host-minus-event gap may exceed the baseline's by launch-overhead
# differences (Triton launches cost tens of microseconds more than eager's), not by real work.
HOST_GAP_FACTOR = 3.0
HOST_GAP_SLACK_MS = 0.1


def tensor_bytes(*values: Any) -> int:
    leaves = [leaf for v in values for leaf in tree_flatten(v)[0]]
    return sum(t.numel() * t.element_size() for t in leaves if isinstance(t, torch.Tensor))


def roofline_ms(min_bytes: int, flops: float | None, peaks: Peaks) -> float:
    """The least time the hardware needs: every input and output byte moved once at peak bandwidth, and the
    declared FLOPs at the fastest matrix rate (bf16 tensor cores bound every precision from below). Measured
    and datasheet peaks are both considered; the larger wins, so an honest kernel is never held to a slow
    measurement."""
    sheet = peaks.datasheet or (0.0, 0.0, 0.0)
    bandwidth = max(peaks.bandwidth_gbs, sheet[0]) * 1e9
    t_mem = min_bytes / bandwidth if bandwidth > 0 else 0.0
    rate = max(peaks.fp32_tflops, peaks.half_tflops or 0.0, sheet[1], sheet[2]) * 1e12
    t_compute = flops / rate if flops and rate > 0 else 0.0
    return max(t_mem, t_compute) * 1e3


def too_fast(cr: CaseResult, bound_ms: float) -> str:
    t = cr.t_candidate_ms
    if t is None or bound_ms <= 0 or t >= ROOFLINE_SLACK * bound_ms:
        return ""
    return (
        f"faster than the hardware allows: {t:.4g} ms measured, the roofline bound is {bound_ms:.4g} ms "
        f"(rejected below {ROOFLINE_SLACK:g}x of it)"
    )


def host_clock_gap(cr: CaseResult) -> str:
    """Work on side streams or threads shows in the host-clock time (whole-device synchronize) but not in the
    events around the call: a candidate whose host time exceeds what explains it (its event time, or the host
    time it takes to issue the call where launches dominate) by far more than the baseline's does ran work
    outside the timed stream."""
    values = (cr.t_candidate_host_ms, cr.t_candidate_ms, cr.t_eager_host_ms, cr.t_eager_ms)
    if any(v is None for v in values):
        return ""
    cand_host, cand_event, base_host, base_event = values  # type: ignore[misc]
    cand_busy = max(cand_event, cr.t_candidate_launch_ms or 0.0)
    base_busy = max(base_event, cr.t_eager_launch_ms or 0.0)
    cand_gap, base_gap = cand_host - cand_busy, max(base_host - base_busy, 0.0)
    if cand_gap > HOST_GAP_FACTOR * base_gap + HOST_GAP_SLACK_MS and cand_host > 2 * cand_busy:
        return (
            f"host clock {cand_host:.4g} ms vs {cand_event:.4g} ms in the timed stream (baseline {base_host:.4g} vs "
            f"{base_event:.4g} ms): work ran outside the timed stream"
        )
    return ""


def review_note(cr: CaseResult) -> str:
    if cr.speedup is not None and cr.speedup > REVIEW_SPEEDUP:
        return f"speedup {cr.speedup:.1f}x exceeds {REVIEW_SPEEDUP:g}x: review before trusting it"
    return ""
