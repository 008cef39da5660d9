"""The judge's clock over a block of the candidate's calls (GPU, the candidate in a process of its own): the
unseen-inputs check and the bound on the times that process reports, in one measurement it cannot forge.

On a GPU a call's device time is seen only by events in the process that launched it, so the candidate's process
times its own calls, and whatever runs there can rewrite what it reports. What it cannot do is finish correct work
on contents it has never seen sooner than the work takes. So after timing, the judge copies K sets of contents
never shown to the candidate into buffers it shares, asks for one call on each in a single request (one CUDA-graph
replay where the calls can be captured, launched one by one where not) that ends with a synchronize, and brackets
the request with its own clock, less an empty request's. Every one of the K outputs is then compared with the
reference: the work was done, within the bracket. K is chosen so the block takes milliseconds by the reported
median, far above a request's own cost and spread.

A call on unseen contents may take FACTOR times the reported median (scaled by how much more work the new contents
hold for the reference: its block on them against its block on the timing sets, both timed here), plus the slack:
a cache keyed by content misses on every one of them, and a shrunk report is exceeded by the work itself. A graph
replay is back-to-back device work with warm caches, which an honest call's cold-cache median rarely undercuts,
but a block of kernels of a few microseconds measures otherwise than the timer (a graph's cost per kernel), hence
the slack, the in-process check's own. Calls launched one by one (not capturable) also pay their host time, which
the events around a timed call leave out, so there the bound is the host-clock median (the call and a device
synchronize) and the result is listed for review: the device time it reports is bounded only as far as that.
"""

from __future__ import annotations

import math
import time
from typing import Any

import torch

from kernelevolve.eval.worker import memory, speed, trees
from kernelevolve.eval.worker.checking import CandidateFailure, Guard, check_output, explain
from kernelevolve.eval.worker.prepare import PreparedCase
from kernelevolve.eval.worker.timing import capture
from kernelevolve.result import CaseResult, Status

BLOCK_MS = 1.5  # a block's length by the reported median
MIN_CALLS, MAX_CALLS = 4, 128
MEMORY_SHARE = 0.25  # of the device's free memory, for the block's inputs (new and seen), references and outputs
FACTOR = 1.25
SLACK_MS = 0.02
MAX_WORK_DRIFT = 2.0
PINGS = 5


def calls_for(claim_ms: float, bytes_per_call: int, free_bytes: int) -> int:
    """K: enough calls for BLOCK_MS by the reported median, within MIN_CALLS..MAX_CALLS and the memory share."""
    wanted = math.ceil(BLOCK_MS / max(claim_ms, 1e-4))
    room = int(MEMORY_SHARE * free_bytes) // max(bytes_per_call, 1)
    return max(min(wanted, MAX_CALLS, room), 0)


def check_block(pc: PreparedCase, model: Any, cr: CaseResult, g: Guard) -> None:
    """Raises CandidateFailure (incorrect: an output on unseen contents is wrong; rejected: the block took longer
    than the bound)."""
    claim = cr.t_candidate_ms
    if not claim or not trees.same_layout(pc.timing_sets):
        return
    per_set = speed.tensor_bytes(pc.timing_sets[0], pc.timing_refs[0] if pc.timing_refs else [])
    k = calls_for(claim, 4 * per_set, torch.cuda.mem_get_info(g.device)[0])
    if k < MIN_CALLS:
        g.review.append(f"{cr.shape}: unseen-inputs check skipped: no room on the device for {MIN_CALLS} input sets")
        return
    sets = _fresh(pc, k, g.device)
    if not trees.same_layout([pc.timing_sets[0]] + [inputs for inputs, _ in sets]):
        return  # jagged contents: the buffers cannot take them (the rotation is skipped alike)
    g.ran("unseen_inputs", "timing_cross_check")
    buffers = g.host.adopt_many([trees.clone(pc.timing_sets[0]) for _ in sets])  # contents it has seen, to warm up on
    try:
        mode = g.host.block(model, buffers)
        with torch.no_grad():
            for buf, (inputs, _) in zip(buffers, sets):
                trees.copy_(buf, inputs)
        torch.cuda.synchronize(g.device)
        empty = min(g.host.ping() for _ in range(PINGS))
        wall = g.host.block_run()
        outs = g.host.block_outputs()
        if len(outs) != len(sets):
            raise CandidateFailure(
                Status.REJECTED, f"unseen-inputs check: {len(outs)} outputs came back from {len(sets)} calls"
            )
        for i, (out, (_, ref)) in enumerate(zip(outs, sets)):
            check_output(out, [], pc, g)
            cmp = explain(pc.judge_set(out, ref), out, f"unseen input set {i}")
            if not cmp.ok:
                raise CandidateFailure(
                    Status.INCORRECT,
                    f"unseen-inputs check: the output on inputs it had not seen is wrong ({cmp.reason})",
                )
        del outs
        per_call = max(wall - empty, 0.0) / len(sets)
        cr.t_candidate_unseen_ms = per_call
        own = claim if mode == "graph" else max(claim, cr.t_candidate_host_ms or 0.0)
        fresh = [inputs for inputs, _ in sets]
        # The contents it was timed on, in as many buffers as the block's: the same footprint, other values.
        seen = [trees.clone(pc.timing_sets[i % len(pc.timing_sets)]) for i in range(len(fresh))]
        ref_mode, ref_fresh = reference_block(pc, fresh, mode, g.device)
        ref_seen = reference_block(pc, seen, ref_mode, g.device)[1]
        drift = min(max(ref_fresh / ref_seen if ref_seen else 1.0, 1.0), MAX_WORK_DRIFT)
        bound = FACTOR * own * drift + SLACK_MS
        if per_call > bound:
            what = "device time" if mode == "graph" else "host-clock time"
            raise CandidateFailure(
                Status.REJECTED,
                f"unseen-inputs check: {len(sets)} calls on inputs it had not seen took {per_call:.4g} ms a call by "
                f"the judge's clock ({'one CUDA-graph replay' if mode == 'graph' else 'launched one by one'}), "
                f"against {own:.4g} ms reported ({what}; allowed {bound:.4g} ms): results are reused across calls, "
                "or the reported times are not the calls'",
            )
        if mode == "plain":
            g.review.append(
                f"{cr.shape}: the calls could not be captured as a CUDA graph, so the judge's clock bounds their "
                f"host-clock time ({per_call:.4g} ms a call on unseen inputs), not the device time reported"
            )
    finally:
        g.host.forget_many(buffers)


def _fresh(pc: PreparedCase, k: int, device: torch.device) -> list[tuple[Any, Any]]:
    """k input sets the candidate has never seen, with their references: the held-back ones first, then new ones
    drawn by the problem (pc.fresh)."""
    held = [
        (memory.to(inputs, device), memory.to(ref, device))
        for inputs, ref in list(zip(pc.unseen_sets, pc.unseen_refs))[pc.unseen_used :]
    ][:k]
    pc.unseen_used = len(pc.unseen_sets)
    return held + (pc.fresh(k - len(held)) if pc.fresh is not None and k > len(held) else [])


def reference_block(pc: PreparedCase, sets: list[Any], mode: str, device: torch.device) -> tuple[str, float]:
    """The reference over `sets` as the candidate's block ran (a CUDA-graph replay, or launched one by one where
    either cannot be captured), in this process, on this process's clock: (the mode, ms a call)."""
    with torch.no_grad():
        for inputs in sets[:2]:
            pc.ref_model(*inputs)
        torch.cuda.synchronize(device)
        run = None
        if mode == "graph":
            try:
                graph, held = capture(lambda: [pc.ref_model(*inputs) for inputs in sets], device, warm_ups=1)
                run = graph.replay
            except Exception:  # noqa: BLE001 - not capturable: launched one by one, as the candidate's may be
                torch.cuda.synchronize(device)
                run = None
        if run is None:
            mode = "plain"

            def run() -> None:
                for inputs in sets:
                    pc.ref_model(*inputs)

        best = float("inf")
        for _ in range(3):
            torch.cuda.synchronize(device)
            t0 = time.perf_counter()
            run()
            torch.cuda.synchronize(device)
            best = min(best, time.perf_counter() - t0)
        del run
        if mode == "graph":
            del graph, held
    return mode, best * 1e3 / len(sets)
