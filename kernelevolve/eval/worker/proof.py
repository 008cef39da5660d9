"""The judge's clock over a block of the candidate's calls (GPU, the candidate in a process of its own): the
unseen-inputs check and the bound on the times that process reports, in one measurement it cannot forge.

After timing, the judge copies K sets of contents never shown into buffers it shares, asks for one call on each in
a single request (one CUDA-graph replay where the calls can be captured, else launched one by one), brackets the
request with its own clock, reads a random sample of every output inside the bracket, and compares the outputs
whole after it. The bound (FACTOR times the reported median, the reference's drift on the new contents, the
slacks, the bracket's own cost calibrated before the candidate loads), jagged sets and the second block are
described in docs/harness.md ("The judge's process on GPU targets").
"""

from __future__ import annotations

import math
import sys
import time
import traceback
from dataclasses import dataclass
from typing import Any

import torch

from kernelevolve.eval.worker import memory, speed, trees
from kernelevolve.eval.worker.checking import CandidateFailure, Guard, check_output, explain
from kernelevolve.eval.worker.prepare import PreparedCase
from kernelevolve.eval.worker.timing import capture
from kernelevolve.platforms import for_device
from kernelevolve.result import CaseResult, Status

BLOCK_MS = 1.0  # a block's length by the reported median
MIN_CALLS, MAX_CALLS = 4, 32
MIN_LONG_CALLS = 2  # calls that alone fill the block: two are a measurement far above a request's spread
FACTOR = 1.25
SLACK_MS = 0.02
# Over a whole block: what its bracket costs beyond the calibration, which runs before the candidate loads (the
# host's launch of the block's graph, the two processes' wake-ups and the device's switches between their
# contexts once the candidate's process holds the candidate), which docs/benchmarks/harness.md takes apart.
BLOCK_SLACK_MS = 0.3
# Calls launched one by one: the host's share of a call (its host-clock median less the device time reported) may
# take this many times as long in the block; host-bound code (launches, synchronizations) varies that much within
# one process from one measurement to the next (docs/benchmarks/harness.md, "Host-bound code on the device
# machine's CPUs").
HOST_FACTOR = 2.0
COPY_LAUNCH_MS = 0.01  # the host's cost of launching a copy of one output, for calls launched one by one
MAX_WORK_DRIFT = 2.0
CALIBRATION_OUTPUTS, CALIBRATION_ROUNDS = 32, 5
SAMPLES = 1024  # elements of each output the judge reads inside its clock, at places only it knows


def fewest_calls(claim_ms: float) -> int:
    """The fewest calls a block needs: MIN_CALLS, or MIN_LONG_CALLS where that many fill BLOCK_MS by the report."""
    return MIN_LONG_CALLS if MIN_LONG_CALLS * claim_ms >= BLOCK_MS else MIN_CALLS


def calls_for(claim_ms: float, bytes_per_call: int, free_bytes: int) -> int:
    """K: enough calls for BLOCK_MS by the reported median, within fewest_calls..MAX_CALLS and the memory share
    (fewer than the fewest only where the memory share has no room for more)."""
    wanted = max(math.ceil(BLOCK_MS / max(claim_ms, 1e-4)), fewest_calls(claim_ms))
    room = int(memory.BLOCK_SHARE * free_bytes) // max(bytes_per_call, 1)
    return max(min(wanted, MAX_CALLS, room), 0)


def check_block(pc: PreparedCase, model: Any, cr: CaseResult, g: Guard) -> None:
    """Raises CandidateFailure (incorrect: an output on unseen contents is wrong; rejected: the block took longer
    than the bound, or its outputs changed after the judge's clock stopped; harness_limit: the device has no room
    for the block, which is never skipped)."""
    claim = cr.t_candidate_ms
    if not claim:
        return
    per_set = speed.tensor_bytes(pc.timing_sets[0], pc.timing_refs[0] if pc.timing_refs else [])
    free = for_device(g.device).held_and_free(g.device)[1]
    fewest = fewest_calls(claim)
    k = calls_for(claim, memory.BLOCK_SETS_PER_CALL * per_set, free)
    if k < fewest:
        need = fewest * memory.BLOCK_SETS_PER_CALL * per_set / memory.BLOCK_SHARE
        raise CandidateFailure(
            Status.HARNESS_LIMIT,
            f"harness limit: the unseen-inputs check needs {need / memory.GB:.3g} GB of free device memory for "
            f"{fewest} calls on new contents, and {free / memory.GB:.3g} GB is free: no verdict on the candidate",
        )
    with g.part("unseen_inputs.fresh"):
        sets = _fresh(pc, k, g.device)
    g.ran("unseen_inputs", "timing_cross_check")
    # Jagged inputs, or outputs whose shapes follow the values: the block's buffers and outputs are shaped as each
    # new set (own), and no call on them can come before the clock (they would hold contents unseen, or contents
    # no set of theirs holds), so a first call on a shape may pay what a first call pays (a kernel specialized for
    # it, compiled). And one block is one measurement, which a GPU shared with another process's start (a spare
    # worker's) can stretch. So a block over the bound is followed by a second, on sets never shown either; only
    # its verdict stands, and a cache misses on both.
    own = not _one_layout(pc, sets)
    failure = _block(pc, model, cr, g, sets, own)
    if failure is not None:
        with g.part("unseen_inputs.fresh"):
            again = _fresh(pc, k, g.device)
        if len(again) >= fewest:
            failure = _block(pc, model, cr, g, again, own)
    if failure is not None:
        raise failure


def _one_layout(pc: PreparedCase, sets: list[tuple[Any, Any]]) -> bool:
    """Whether every input set (timing and new) has one layout, and so has every reference output: the block's
    buffers can then take each set's contents in turn, and the calls' outputs are shaped alike."""
    inputs = pc.timing_sets + [inputs for inputs, _ in sets]
    refs = (pc.timing_refs[:1] if pc.timing_refs else []) + [ref for _, ref in sets]
    return trees.same_layout(inputs) and trees.same_layout(refs)


def _block(
    pc: PreparedCase, model: Any, cr: CaseResult, g: Guard, sets: list[tuple[Any, Any]], own: bool
) -> CandidateFailure | None:
    """One block of calls on `sets`: the rejection where it took longer than the bound (raised where an output
    is wrong or changed after the clock). own=False: buffers holding contents the candidate has seen, on which its
    process warms up and captures its calls before the new contents are copied in, and outputs written where
    that process names. own=True (jagged sets, outputs shaped by the values): buffers shaped as each new set and
    outputs of the judge's own, shaped as each reference, both shared empty; the calls are launched one by one."""
    with g.part("unseen_inputs.handover"):
        if own:  # zeros in the buffers, till the new contents go in just before the clock
            buffers = g.host.adopt_many([trees.map_tensors(torch.zeros_like, inputs) for inputs, _ in sets])
            given = g.host.adopt_many([trees.map_tensors(torch.empty_like, ref) for _, ref in sets])
        else:  # contents it has seen, to warm up on
            buffers = g.host.adopt_many([trees.clone(pc.timing_sets[0]) for _ in sets])
            given = []
    ready, failed = False, True
    try:
        with g.part("unseen_inputs.setup"):  # the candidate's process warms up and captures its calls
            mode, slots = g.host.block(model, buffers, given if own else None)
            ready = True
        with g.part("unseen_inputs.sampler"):
            _check_slots(slots, sets, pc, g)
            sampler = Sampler(slots, g.device)
        with g.part("unseen_inputs.run"):
            with torch.no_grad():
                for slot in slots:  # what a call leaves unwritten reads as such
                    spoil(slot)
                for buf, (inputs, _) in zip(buffers, sets):
                    trees.copy_(buf, inputs)
            for_device(g.device).synchronize(g.device)
            wall, taken, said = g.host.block_run(sampler.read)
        with g.part("unseen_inputs.outputs"):
            outs = [trees.clone(slot) for slot in slots]
            if not sampler.agrees(taken, outs):
                raise CandidateFailure(
                    Status.REJECTED,
                    "unseen-inputs check: the outputs of the judge's block of calls changed after its clock "
                    "stopped: the work was not done within the calls",
                )
            _check_outputs(outs, sets, pc, g)
        verdict = _block_verdict(pc, cr, g, sets, own, (mode, wall, said, outs, len(sampler.leaves)))
        failed = verdict is not None
        return verdict
    finally:
        with g.part("unseen_inputs.release"):
            try:
                if ready:
                    g.host.block_end()
                g.host.forget_many(buffers + given)
            except CandidateFailure:
                if not failed:
                    raise  # otherwise the verdict already raised stands


def _block_verdict(
    pc: PreparedCase,
    cr: CaseResult,
    g: Guard,
    sets: list[tuple[Any, Any]],
    own: bool,
    run: tuple[str, float, float | None, list[Any], int],
) -> CandidateFailure | None:
    """The block's time against its bound: the rejection where the calls took longer than the report allows
    (the bound widened by the reference's own drift on the new contents where it is exceeded), else None.
    run: (mode, the judge's wall ms, what the candidate's process says, the outputs, the leaves sampled)."""
    mode, wall, said, outs, leaves = run
    claim = cr.t_candidate_ms or 0.0
    empty = g.host.block_overhead.ms(leaves) if g.host.block_overhead is not None else 0.0
    own_events = "" if said is None else f"; its process says its events saw {said:.4g} ms (not trusted)"
    print(
        f"[kernelevolve worker] unseen-inputs block: {len(sets)} calls ({mode}): {wall:.4g} ms by the judge's "
        f"clock, less {empty:.4g} ms for the request and the read of {leaves} outputs; reported "
        f"{claim:.4g} ms a call{own_events}",
        file=sys.stderr,
        flush=True,
    )
    per_call = max(wall - empty, 0.0) / len(sets)
    cr.t_candidate_unseen_ms = per_call
    host_ms = 0.0 if mode == "graph" else max((cr.t_candidate_host_ms or 0.0) - claim, 0.0)
    own_ms = claim + host_ms
    # Calls launched one by one copy each output into its slot: each copy's launch, and their least time on
    # the device (their bytes at the device's measured copy bandwidth).
    copy_ms = 0.0 if mode == "graph" else COPY_LAUNCH_MS * _leaves_per_call(outs) + _copy_floor_ms(outs, g.device)

    def bound_ms(drift: float) -> float:
        return (FACTOR * claim + HOST_FACTOR * host_ms) * drift + copy_ms + SLACK_MS + BLOCK_SLACK_MS / len(sets)

    bound = bound_ms(1.0)
    if per_call > bound:  # the drift only widens the bound: measured where the block needs it
        with g.part("unseen_inputs.reference"):
            # The contents it was timed on, in as many buffers as the block's: the same footprint, other values.
            seen = [trees.clone(pc.timing_sets[i % len(pc.timing_sets)]) for i in range(len(sets))]
            ref_seen, ref_fresh = reference_block(pc, seen, [inputs for inputs, _ in sets], mode, g.device)
        bound = bound_ms(min(max(ref_fresh / ref_seen if ref_seen else 1.0, 1.0), MAX_WORK_DRIFT))
    if per_call > bound:
        what = "device time" if mode == "graph" else "host-clock time"
        return CandidateFailure(
            Status.REJECTED,
            f"unseen-inputs check: {len(sets)} calls on inputs it had not seen took {per_call:.4g} ms a call by "
            f"the judge's clock ({'one CUDA-graph replay' if mode == 'graph' else 'launched one by one'}), "
            f"against {own_ms:.4g} ms reported ({what}; allowed {bound:.4g} ms): results are reused across "
            "calls, or the reported times are not the calls'",
        )
    if mode == "plain":
        why = (
            "were launched one by one (the input sets differ in shape, or the outputs' shapes follow the values)"
            if own
            else "could not be captured as a CUDA graph"
        )
        g.review.append(
            f"{cr.shape}: the calls {why}, so the judge's clock bounds their host-clock time ({per_call:.4g} ms a "
            "call on unseen inputs), not the device time reported"
        )
    return None


@dataclass(frozen=True)
class Overhead:
    """What the block's bracket costs without the block (the request, its reply, the switch to the judge's work
    on the device, the read of n outputs), in ms: measured with 1 and with `outputs` outputs, linear between."""

    one: float
    many: float
    outputs: int

    def ms(self, n: int) -> float:
        slope = (self.many - self.one) / max(self.outputs - 1, 1)
        return max(self.one + slope * (n - 1), 0.0)


def calibrate(host: Any, device: torch.device) -> Overhead:
    """The bracket around a request of one tiny kernel, with the judge's read of 1 and of CALIBRATION_OUTPUTS
    outputs of its own, fastest of CALIBRATION_ROUNDS each. Measured before the candidate loads, while the other
    process runs only the harness's code: subtracted from the block's bracket, it is nothing that process can
    stretch."""
    outputs = [torch.zeros(SAMPLES, device=device) for _ in range(CALIBRATION_OUTPUTS)]
    found = []
    for n in (1, CALIBRATION_OUTPUTS):
        sampler = Sampler(outputs[:n], device)
        found.append(min(host.tick(sampler.read)[0] for _ in range(CALIBRATION_ROUNDS)))
    return Overhead(found[0], found[1], CALIBRATION_OUTPUTS)


def _check_slots(slots: list[Any], sets: list[tuple[Any, Any]], pc: PreparedCase, g: Guard) -> None:
    """One output per call, each shaped as the reference's (the judge's own slots are so by construction)."""
    if len(slots) != len(sets):
        raise CandidateFailure(
            Status.REJECTED, f"unseen-inputs check: {len(slots)} outputs for a block of {len(sets)} calls"
        )
    for slot, (_, ref) in zip(slots, sets):
        check_output(slot, [], pc, g)
        if not trees.same_layout([slot, ref]):
            raise CandidateFailure(
                Status.REJECTED, "unseen-inputs check: an output of the block is not shaped as the reference's"
            )


def _check_outputs(outs: list[Any], sets: list[tuple[Any, Any]], pc: PreparedCase, g: Guard) -> None:
    for i, (out, (_, ref)) in enumerate(zip(outs, sets)):
        cmp = explain(pc.judge_set(out, ref), out, f"unseen input set {i}")
        if not cmp.ok:
            raise CandidateFailure(
                Status.INCORRECT, f"unseen-inputs check: the output on inputs it had not seen is wrong ({cmp.reason})"
            )


def spoil(tree: Any) -> None:
    """Every tensor of tree overwritten with values no call leaves by chance: NaN, or random integers."""
    for t in trees.tensors(tree):
        if t.is_floating_point() or t.is_complex():
            t.fill_(float("nan"))
        else:
            t.random_()


class Sampler:
    """The judge's read of the block's outputs inside its clock: SAMPLES elements of each output at random places
    (chosen here, in memory the candidate's process does not map; all of a smaller output), in one CUDA-graph
    replay where it can be captured. An output finished after the clock stopped differs from it there."""

    def __init__(self, slots: list[Any], device: torch.device) -> None:
        self.leaves = [t for slot in slots for t in trees.tensors(slot) if t.numel()]
        self.places = [  # every element of an output no larger than the sample
            torch.arange(t.numel(), device=t.device)
            if t.numel() <= SAMPLES
            else torch.randint(0, t.numel(), (SAMPLES,), device=t.device)
            for t in self.leaves
        ]
        self.graph: Any = None
        if for_device(device).separate_device():
            try:
                self.graph, self.held = capture(self._take, device, warm_ups=1)
                self.graph.replay()  # a graph's first replay uploads it: not inside the clock
                for_device(device).synchronize(device)
            except Exception:  # noqa: BLE001 - not capturable: read by launches, a few microseconds each
                traceback.print_exc()
                for_device(device).synchronize(device)
                self.graph = None

    def _take(self) -> list[torch.Tensor]:
        return [torch.take(t, i) for t, i in zip(self.leaves, self.places)]

    def read(self) -> list[torch.Tensor]:
        if self.graph is None:
            return self._take()
        self.graph.replay()
        return self.held

    def agrees(self, taken: list[torch.Tensor], outs: list[Any]) -> bool:
        """Whether the outputs read after the clock hold, bit for bit, what was read inside it."""
        later = [t for out in outs for t in trees.tensors(out) if t.numel()]
        if len(later) != len(taken) or not taken:
            return len(later) == len(taken)
        same = [  # on the device, read once for all
            (_bits(a) == _bits(torch.take(b, i))).all() if a.shape == i.shape and a.dtype == b.dtype else None
            for a, b, i in zip(taken, later, self.places)
        ]
        return None not in same and bool(torch.stack(same).all())


def _bits(t: torch.Tensor) -> torch.Tensor:
    return t.contiguous().view(torch.uint8)


def _leaves_per_call(outs: list[Any]) -> int:
    return math.ceil(sum(len(trees.tensors(out)) for out in outs) / max(len(outs), 1))


def _copy_floor_ms(outs: list[Any], device: torch.device) -> float:
    """The least time a device copy of one call's outputs takes: its bytes read and written at the device's
    measured copy bandwidth (0 where it is not known)."""
    try:
        from kernelevolve.platforms.peaks import peaks

        bandwidth = peaks(device).bandwidth_gbs
    except Exception:  # noqa: BLE001 - unknown: no allowance
        return 0.0
    per_call = sum(t.numel() * t.element_size() for out in outs for t in trees.tensors(out)) / max(len(outs), 1)
    return 2 * per_call / (bandwidth * 1e6) if bandwidth else 0.0


def _fresh(pc: PreparedCase, k: int, device: torch.device) -> list[tuple[Any, Any]]:
    """k input sets the candidate has never seen, with their references: the held-back ones first, then new ones
    drawn by the problem (pc.fresh)."""
    held = [
        (memory.to(inputs, device), memory.to(ref, device))
        for inputs, ref in list(zip(pc.unseen_sets, pc.unseen_refs))[pc.unseen_used :]
    ][:k]
    pc.unseen_used = len(pc.unseen_sets)
    return held + (pc.fresh(k - len(held)) if pc.fresh is not None and k > len(held) else [])


def reference_block(
    pc: PreparedCase, seen: list[Any], fresh: list[Any], mode: str, device: torch.device
) -> tuple[float, float]:
    """The reference over `seen` (buffers of the judge's own), then over `fresh`, as the candidate's block ran
    (a CUDA-graph replay, over the same buffers holding `fresh`'s contents; or launched one by one where either
    cannot be captured), in this process, on this process's clock: (ms a call on each)."""
    with torch.no_grad():
        for inputs in seen[:2]:
            pc.ref_model(*inputs)
        for_device(device).synchronize(device)
        captured: Any = None  # (graph, its outputs), kept while it replays
        if mode == "graph":
            try:
                captured = capture(lambda: [pc.ref_model(*inputs) for inputs in seen], device, warm_ups=1)
            except Exception:  # noqa: BLE001 - not capturable: launched one by one, as the candidate's may be
                for_device(device).synchronize(device)

        def run(sets: list[Any]) -> None:
            if captured is not None:
                captured[0].replay()
            else:
                for inputs in sets:
                    pc.ref_model(*inputs)

        on_seen = _best_ms(lambda: run(seen), device) / len(seen)
        if captured is not None:
            for buf, inputs in zip(seen, fresh):
                trees.copy_(buf, inputs)
        on_fresh = _best_ms(lambda: run(fresh), device) / len(fresh)
    return on_seen, on_fresh


def _best_ms(run: Any, device: torch.device, repeats: int = 3) -> float:
    best = float("inf")
    for _ in range(repeats):
        for_device(device).synchronize(device)
        t0 = time.perf_counter()
        run()
        for_device(device).synchronize(device)
        best = min(best, time.perf_counter() - t0)
    return best * 1e3
