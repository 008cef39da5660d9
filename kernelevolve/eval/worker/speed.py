"""Sanity bounds on measured times (GPU targets): faster than the hardware allows, or work done where the timed
events cannot see it. And a review flag for speedups large enough to deserve a human look on any target.
"""

from __future__ import annotations

from typing import Any

from kernelevolve.eval.worker import trees
from kernelevolve.platforms.peaks import Peaks
from kernelevolve.result import CaseResult

# Reject below half the roofline time: the bound counts every byte once at peak bandwidth, and an output that
# fits in L2 may be only partly written back when the end event fires, so an honest kernel can measure up to
# ~2x under it, never more.
ROOFLINE_SLACK = 0.5
REVIEW_SPEEDUP = 10.0
PAGING_FAULTS = 1024  # minor page faults per timed call (4 MB of fresh 4 KB pages) worth a review note
# cpu: the reference timed beside the candidate (in the candidate's process) over the same reference timed alone
# in the judge's, past which the speedup may count the candidate's interference: worth a review note.
BESIDE_FACTOR = 1.5
# Host-clock cross-check: once a call returns, the device can still have at most the call's own work ahead of it
# (its event time) plus the synchronize's wake-up latency. Twice the event time and 50 us leave room for noise;
# the baseline's own excess (this machine's synchronize latency) is allowed on top.
TAIL_FACTOR = 2.0
TAIL_SLACK_MS = 0.05


def tensor_bytes(*values: Any) -> int:
    return sum(t.numel() * t.element_size() for t in trees.tensors(list(values)))


def roofline_parts_ms(min_bytes: int, flops: float | None, peaks: Peaks) -> tuple[float, float]:
    """The two parts of the roofline floor, (bytes, FLOPs) in ms; the floor is the larger. Bytes: every input and
    output byte moved once at peak bandwidth. FLOPs: the declared FLOPs at the fastest matrix rate (bf16 tensor
    cores bound every precision from below). Measured and datasheet peaks are both considered; the larger wins, so
    an honest kernel is never held to a slow measurement."""
    sheet = peaks.datasheet or (0.0, 0.0, 0.0)
    bandwidth = max(peaks.bandwidth_gbs, sheet[0]) * 1e9
    t_mem = min_bytes / bandwidth if bandwidth > 0 else 0.0
    rate = max(peaks.fp32_tflops, peaks.half_tflops or 0.0, sheet[1], sheet[2]) * 1e12
    t_compute = flops / rate if flops and rate > 0 else 0.0
    return t_mem * 1e3, t_compute * 1e3


def measured_bytes_ms(min_bytes: int, peaks: Peaks) -> float | None:
    """min_bytes at the device's measured bandwidth (a copy of 1 GiB): what "a share of the measured HBM
    bandwidth" is taken against."""
    return min_bytes / (peaks.bandwidth_gbs * 1e9) * 1e3 if peaks.bandwidth_gbs > 0 else None


def too_fast(cr: CaseResult, bound_ms: float) -> str:
    t = cr.timing.candidate.median_ms
    if t is None or bound_ms <= 0 or t >= ROOFLINE_SLACK * bound_ms:
        return ""
    return (
        f"faster than the hardware allows: {t:.4g} ms measured, the roofline bound is {bound_ms:.4g} ms "
        f"(rejected below {ROOFLINE_SLACK:g}x of it)"
    )


def host_clock_gap(cr: CaseResult) -> str:
    """Work on side streams or threads keeps the device busy after the call returns (the host clock waits for
    it with a whole-device synchronize) but is not between the events around the call. Launch overhead does
    not count against a candidate: it is spent before the call returns."""
    tail, event, eager = cr.timing.candidate.tail_ms, cr.timing.candidate.median_ms, cr.timing.eager
    if tail is None or event is None:
        return ""
    base_excess = 0.0
    if eager.tail_ms is not None and eager.median_ms is not None:
        base_excess = max(eager.tail_ms - eager.median_ms, 0.0)
    allowed = TAIL_FACTOR * event + TAIL_SLACK_MS + base_excess
    if tail > allowed:
        return (
            f"the device stayed busy {tail:.4g} ms after the call returned, for {event:.4g} ms of work in the timed "
            f"stream (allowed {allowed:.4g} ms): work ran outside the timed stream"
        )
    return ""


def review_note(cr: CaseResult) -> str:
    notes = []
    if cr.speedup is not None and cr.speedup > REVIEW_SPEEDUP:
        notes.append(f"speedup {cr.speedup:.1f}x exceeds {REVIEW_SPEEDUP:g}x: review before trusting it")
    paging = [
        f"{who} {n:.0f}"
        for who, n in (("eager", cr.timing.eager.faults_per_call), ("candidate", cr.timing.candidate.faults_per_call))
        if n is not None and n >= PAGING_FAULTS
    ]
    if paging:
        notes.append(
            f"timed calls page ({', '.join(paging)} page faults a call): the allocator hands them fresh memory, "
            "so these times include faulting it in and zeroing it"
        )
    beside, alone = cr.timing.eager.median_ms, cr.timing.eager.judge_ms
    if beside and alone and beside > BESIDE_FACTOR * alone:
        notes.append(
            f"the reference took {beside / alone:.2f}x as long beside the candidate as alone "
            f"in the judge's process ({beside:.4g} against {alone:.4g} ms): the speedup may "
            "count the candidate's interference"
        )
    return "; ".join(notes)
