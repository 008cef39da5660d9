"""The evaluation itself, run inside an isolated worker process.

Phase A (eval.prepare, trusted) runs before any candidate code exists in the process: the problem is executed,
every input set is built from seeds the parent drew, reference outputs are computed, the torch.compile
baseline is compiled and checked, and what the checks compare against is recorded (fingerprints, threads,
memory spans, the timer). Phase B loads the candidate, checks it on every case and trial (eval.checking), then
times baseline and candidate with the one timer, interleaved, and checks what came out of the timing.
"""

from __future__ import annotations

import contextlib
import platform as pyplatform
import random
import sys
import time
import traceback
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

import torch

from kernelevolve.eval.builds import extension_cache
from kernelevolve.eval.environment import harness_version
from kernelevolve.eval.wire import EvalJob
from kernelevolve.eval.worker import (
    contention,
    integrity,
    launches,
    memory,
    precision,
    proof,
    sampled,
    speed,
    trees,
)
from kernelevolve.eval.worker.checking import (
    CandidateFailure,
    Guard,
    check_case,
    check_output,
    explain,
    failure_of,
    protected_spans,
)
from kernelevolve.eval.worker.host import InProcess, Remote
from kernelevolve.eval.worker.hostload import RunQueueWait
from kernelevolve.eval.worker.integrity import changed, fingerprint, harness_modules
from kernelevolve.eval.worker.policy import policy_default, violations
from kernelevolve.eval.worker.prepare import (
    UNSEEN_FACTOR,
    UNSEEN_SETS,
    UNSEEN_SLACK_MS,
    LoadClock,
    PreparedCase,
    Report,
    describe,
    prepare,
)
from kernelevolve.eval.worker.series import Recorder, copy_of, measure
from kernelevolve.eval.worker.timing import Timer, TimerConfig
from kernelevolve.platforms import activate, for_device, get_platform
from kernelevolve.platforms.base import DeviceMissing
from kernelevolve.problem.candidate import CandidateLoadError, detect_languages, read_source
from kernelevolve.problem.inputs import out_of_memory, problem_dtype
from kernelevolve.problem.problem import (
    ProblemError,
    bind_case,
    case_defaults,
    exec_problem,
    shape_cases,
    source_hash,
)
from kernelevolve.result import Accuracy, CaseResult, CompileTimes, EvalResult, Roofline, Status, Timings

__all__ = ["CandidateFailure", "Report", "run_job"]


def time_case(
    timer: Timer,
    pc: PreparedCase,
    model: Any,
    result: CaseResult,
    g: Guard,
    copy_floor: bool = False,
) -> dict[int, Any]:
    """Times eager, compile and candidate interleaved (with copy_floor, a device copy of the case's minimum
    bytes too); returns the candidate's last output for each timing set, produced after the sets' contents were
    rotated half-way (a result cached per input buffer is then stale), keyed by the set whose contents it is of.
    On a GPU with the candidate in a process of its own, that process runs the timer (eval/worker/series.py) and
    the judge checks the reference's time there against its own."""
    theirs: dict[str, float] = {}  # GPU, the candidate in its own process: the baselines' medians there
    judged: dict[str, float] = {}  # and the judge's
    if g.host.measures:
        with g.part("pass"):
            with g.part("pass.reference"):
                g.host.baselines(model, pc, pc.dtype)
            series = g.host.measure(model, pc, copy_floor, timer.config)
        stats, host, graphs, outputs = series.stats, series.host, series.graphs, series.last
        theirs = {name: st.median_ms for name, st in stats.items() if name in ("eager", "compile")}
        with g.part("cross_check"):
            judged = _cross_check_reference(timer, pc, theirs, g, result, REFERENCE_FACTOR_GPU)
        retime = g.host.retime_host
    else:
        rec = Recorder(pc.timing_sets)
        sampler: sampled.TimedSampler | None = None  # the candidate in its own process: timed calls judged

        def after_call(name: str) -> None:
            if name == "candidate":
                precision.reset()  # in-process: before the next reference call, outside the timer's bracket
                left = g.host.python_left()
                if left:
                    raise CandidateFailure(Status.REJECTED, f"threads check: after a timed call, {left}")
            if sampler is not None:
                sampler.after(name)

        if g.host.in_process:
            fns: dict[str, Callable[[list[Any]], Any]] = {
                "eager": lambda inp: pc.ref_model(*inp),
                "candidate": rec.wrap(lambda inp: model(*inp)),
            }
            if pc.compiled is not None:
                fns["compile"] = lambda inp, c=pc.compiled: c(*inp)
        else:  # the baselines are timed in the candidate's process too, by the same clock
            fns = {**g.host.baselines(model, pc, pc.dtype), "candidate": g.host.timed_fn(model)}
            sampler = sampled.TimedSampler(pc, g, fns)
        copy = copy_of(pc.min_bytes, timer.device) if copy_floor else None
        before = sampler.before if sampler is not None else None
        during = contention.PassLoad(g.host.pids())  # the second busy-host signal: the pass's own wait
        stats, rest = measure(timer, fns, pc.timing_sets, after_call, rec.midway, copy, before)
        result.reliability.contention = during.done() if not g.host.in_process else None
        del copy
        outputs = rec.outputs() if g.host.in_process else rec.outputs(g.host.last_outputs(pc.timing_sets))
        if not g.host.in_process:
            theirs = {"eager": stats["eager"].median_ms}
            judged = _cross_check(timer, pc, fns, g, result)
            sampler.check_times()
        host, graphs = rest()

        def retime() -> dict[str, Any]:
            with torch.no_grad():
                return timer.time_host(fns, pc.timing_sets)

    _record_medians(result, stats)
    if judged:  # the candidate in a process of its own: a baseline it slowed there does not count
        lower_baselines(result, theirs, judged, g)
    if not g.host.in_process and not g.host.measures:
        _judged_floor(result, fns["candidate"])
    _record_side_timings(result, stats, graphs, host)
    confirm_host_tails(retime, result)
    return outputs


def _record_medians(result: CaseResult, stats: dict[str, Any]) -> None:
    """The timed functions' medians and spreads, the candidate's iterations and page faults, into the case."""
    timing = result.timing
    for name in ("candidate", "eager", "compile"):
        if name in stats:
            timing.of(name).median_ms, timing.of(name).iqr_ms = stats[name].median_ms, stats[name].iqr_ms
    timing.iters = stats["candidate"].n
    timing.candidate.faults_per_call = stats["candidate"].faults_per_call
    timing.eager.faults_per_call = stats["eager"].faults_per_call


def _record_side_timings(result: CaseResult, stats: dict[str, Any], graphs: dict, host: dict) -> None:
    """CUDA-graph and host-clock medians, the device copy's time, launch costs and host tails, into the case."""
    timing = result.timing
    for name, st in graphs.items():
        if st is not None:
            timing.of(name).graph_ms = st.median_ms
    for name, st in host.items():
        if st is not None:
            timing.of(name).host_ms = st.median_ms
    stats = dict(stats)
    if "copy" in stats:
        result.roofline.copy_ms = stats.pop("copy").median_ms
    for name, st in stats.items():
        timing.of(name).launch_ms = st.launch_ms
    for name, st in host.items():
        timing.of(name).tail_ms = st.tail_ms if st is not None else None


def _cross_check(timer: Timer, pc: PreparedCase, fns: dict[str, Any], g: Guard, result: CaseResult) -> dict[str, float]:
    """The candidate's process timed every function, each call a request; each report must agree with the judge's
    clock around the same calls, and the reference timed there must not be slower than the same reference timed
    here. Returns the judge's own medians of the baselines (ms, by name); raises CandidateFailure."""
    g.ran("timing_cross_check")
    own: dict[str, float] = {}
    try:  # first, so that the judge has measured the host (its contention) whichever check fails
        own = _cross_check_reference(timer, pc, {"eager": fns["eager"].median_ms()}, g, result, REFERENCE_FACTOR)
    except CandidateFailure as e:
        failure: CandidateFailure | None = e
    else:
        failure = None
    for name, fn in fns.items():
        why = fn.cross_check(name)
        if why:
            raise CandidateFailure(Status.REJECTED, why)
    if failure is not None:
        raise failure
    return own


def _judged_floor(result: CaseResult, fn: Any) -> None:
    """cpu: the candidate's time is at least what the judge's clock allows (host.RemoteFn.floor_ms): a report
    inside the cross-check's bounds but below the call the judge saw (issue 45, class 4: a call of microseconds,
    where a fixed slack was most of the bound) can only lower the speedup. Where the bound, not the report, sets
    the time, the case says so (`unresolved`, hence the result's `unreliable`): the call is below what the judge
    resolves around a request here, and its speedup is a bound, not a figure to rank by."""
    floor, candidate = fn.floor_ms(), result.timing.candidate
    if floor is None or candidate.median_ms is None or floor <= candidate.median_ms:
        return
    result.reliability.unresolved = (
        f"the candidate's process reported {candidate.median_ms:.4g} ms per call, below what the judge's clock "
        f"around its requests allows ({floor:.4g} ms, taken as its time): calls this short are below what the judge "
        "resolves on this host, and the speedup is a bound"
    )
    candidate.median_ms = floor


def _cross_check_reference(
    timer: Timer, pc: PreparedCase, theirs: dict[str, float], g: Guard, result: CaseResult, factor: float
) -> dict[str, float]:
    """The baselines' medians as the candidate's process timed them (`theirs`: eager, and compile where timed, in
    ms) must not exceed `factor` times the same baselines timed here, in the judge's process, plus the slack (a
    candidate in that process could slow them down for real, or report them slower). The judge times them in
    looks, while the candidate's process idles, until the contention probe has its window (eval/worker/
    contention.py): `result.reliability.contention` says what the host gave the judge meanwhile. Returns the judge's own
    medians (ms, by name, the fastest look's); raises CandidateFailure."""
    g.ran("timing_cross_check")
    fns: dict[str, Callable[[list[Any]], Any]] = {"eager": lambda inp: pc.ref_model(*inp)}
    if "compile" in theirs and pc.compiled is not None:
        fns["compile"] = lambda inp, c=pc.compiled: c(*inp)
    # No warm-up spin: the case's timing pass has just kept the device busy (on a GPU, from the other process).
    config = TimerConfig(warmup_s=0.0, warmup_iters=0, min_iters=CROSS_CHECK_ITERS, max_iters=CROSS_CHECK_ITERS)
    quick = Timer(timer.device, config)
    slack = REFERENCE_SLACK_MS["device" if timer.on_device else "host"]
    own = {name: float("inf") for name in fns}

    def look() -> float:
        with torch.no_grad():
            stats = quick.time_interleaved(fns, pc.timing_sets)
        for name in fns:
            own[name] = min(own[name], stats[name].median_ms)
        return stats["eager"].median_ms

    with torch.no_grad():  # one warm-up round, outside the probe's looks
        for fn in fns.values():
            fn(pc.timing_sets[0])
    _, result.reliability.contention = contention.probe_looks(look, g.host.pids(), result.reliability.contention)
    result.timing.eager.judge_ms = own["eager"]
    slower = [name for name in fns if theirs[name] > factor * own[name] + slack]
    if not slower:
        return own
    name = slower[0]
    what = "the reference" if name == "eager" else "the torch.compile baseline"
    raise CandidateFailure(
        Status.REJECTED,
        f"timing cross-check: {what} took {theirs[name]:.4g} ms per call in the candidate's process and "
        f"{own[name]:.4g} ms in the judge's (allowed {factor}x + {slack} ms): something there slows {what} down",
    )


CROSS_CHECK_ITERS = 10
# Timed beside the candidate, the reference shares caches, allocator and cores with it; timed alone in the judge, it
# does not. An honest candidate slows it there (a large output's caches, a C++ kernel's OpenMP pool still spinning
# after its call on a host with few cores), so only a slowdown past this factor is the candidate's doing beyond
# doubt. Each case records both times (t_eager_ms, t_eager_judge_ms).
REFERENCE_FACTOR = 10.0
# On a GPU the device is the judge's and the candidate's process's alike, one at a time: a reference bound by the
# device times the same in both. One bound by the host (launches, synchronizations) times up to about 2x apart,
# in either direction: a virtual machine's CPUs run Python up to 1.8x apart from one to another and from one second
# to the next (docs/benchmarks/harness.md, "Host-bound code on the device machine's CPUs"). So the speedup's
# baseline there is the lower of the two processes' medians (lower_baselines), which a reference slowed in the
# candidate's process cannot raise, and only past this factor is the slowdown rejected as the candidate's doing.
REFERENCE_FACTOR_GPU = 3.0
REFERENCE_SLACK_MS = {"host": 0.5, "device": 0.005}


def lower_baselines(result: CaseResult, theirs: dict[str, float], judged: dict[str, float], g: Guard) -> None:
    """GPU, the candidate in its own process: each baseline's time (eager, torch.compile) becomes the lower of its
    median there (`theirs`) and the judge's (`judged`), so the speedup never counts a baseline that process made
    slower; past BESIDE_FACTOR apart the case says so in `review`."""
    for name in ("eager", "compile"):
        times = result.timing.of(name)
        if name not in theirs or name not in judged or times.median_ms is None:
            continue
        times.median_ms = min(theirs[name], judged[name])
        if theirs[name] > speed.BESIDE_FACTOR * judged[name]:
            what = "the reference" if name == "eager" else "the torch.compile baseline"
            g.review.append(
                f"{result.shape}: {what} took {theirs[name]:.4g} ms in the candidate's process and "
                f"{judged[name]:.4g} ms in the judge's: the speedup takes the lower"
            )


def confirm_host_tails(retime: Callable[[], dict[str, Any]], result: CaseResult) -> None:
    """Before the host-clock check rejects, the host clock runs once more (`retime`: Timer.time_host over the same
    functions, wherever they run) and each function keeps its smaller tail. Work on a side stream stretches every
    tail; a busy host can stretch one median of an honest kernel (docs/benchmarks/harness.md, "A false rejection
    under a busy host")."""
    if not speed.host_clock_gap(result):
        return
    for name, st in retime().items():
        times = result.timing.of(name)
        if st is not None and st.tail_ms is not None and times.tail_ms is not None:
            times.tail_ms = min(times.tail_ms, st.tail_ms)


def _copies(sets: list[list[Any]]) -> list[list[Any]]:
    return [trees.clone(inputs) for inputs in sets]


def _restore(sets: list[list[Any]], saved: list[list[Any]] | None) -> None:
    for inputs, copies in zip(sets, saved or []):
        trees.copy_(inputs, copies)


def _timed(
    timer: Timer, pc: PreparedCase, model: torch.nn.Module, cr: CaseResult, g: Guard, copy_floor: bool
) -> tuple[str, CandidateFailure | None, RunQueueWait]:
    """One timing pass of a case and the checks of what it produced: (the timing-outputs failure, a rejection
    raised by a check, the host's run-queue wait over the pass)."""
    waited = RunQueueWait(g.host.pids())
    try:
        outputs = time_case(timer, pc, model, cr, g, copy_floor=copy_floor)
        why = check_timing_outputs(pc, outputs, g)
        with g.part("unseen_inputs"):
            if not why and g.host.measures:  # the judge's clock over a block of calls on unseen contents
                proof.check_block(pc, model, cr, g)
            elif not why:
                check_unseen_inputs(timer, pc, model, cr, g)
    except CandidateFailure as e:
        return "", e, waited
    return why, None, waited


def check_timing_outputs(pc: PreparedCase, outputs: dict[int, Any], g: Guard) -> str:
    """The candidate's last output for every timing set against that set's reference: caching across calls
    and results computed outside the call (threads that finish later) show here."""
    g.ran("timing_outputs")
    for k, ref in enumerate(pc.timing_refs):
        if k not in outputs:
            return f"timing-outputs check: timing set {k} has no output recorded after its contents changed"
        check_output(outputs[k], [], pc, g)
        cmp = explain(pc.judge_set(outputs[k], ref), outputs[k], f"timing set {k}")
        if not cmp.ok:
            return f"timing-outputs check: the output of a timed call is wrong ({cmp.reason})"
    return ""


UNSEEN_PER_ROUND = 2  # held-back sets per round; a check takes two rounds' worth (prepare.UNSEEN_SETS)


def check_unseen_inputs(timer: Timer, pc: PreparedCase, model: torch.nn.Module, cr: CaseResult, g: Guard) -> None:
    """After timing, contents held back in phase A are copied into the timing buffers and the candidate is called
    on each once: its output must be right, and the call must not be much slower than its timed median and than
    calls on contents it has seen, made just before and just after each (so a busy machine slows both alike). The
    seen calls count by the fastest of the round: a host that stalls one short call for a scheduler slice would
    otherwise lift the bound over a cache's misses (a cache keyed by content passed so on a busy CI machine). A
    round takes two held-back sets; where it fails, a second round takes two more, never seen either, and only a
    second failure rejects: on a busy CPU one call in several can stall for a scheduler slice, many times an
    honest kernel's time (docs/benchmarks/harness.md, "A false rejection on a busy CPU"), while a cache keyed by
    content misses on every new set. Each set is shown once: a second timing pass takes fresh ones. Where the sets
    differ in layout (jagged inputs: the rotation skips them, so a result cached per buffer is caught here only),
    each held-back set goes into buffers of its own, shaped as it and shared before its contents are copied in.
    Raises CandidateFailure."""
    timed_ms = cr.timing.candidate.median_ms
    kind = "device" if timer.on_device else "host"
    factor, slack = UNSEEN_FACTOR[kind], UNSEEN_SLACK_MS[kind]
    fresh = len(pc.unseen_sets) - pc.unseen_used
    if not fresh or not timed_ms:
        return
    g.ran("unseen_inputs")
    n = pc.unseen_used + min(fresh, UNSEEN_SETS)
    starts = range(pc.unseen_used, n, UNSEEN_PER_ROUND)
    jagged = not trees.same_layout(pc.timing_sets + pc.unseen_sets)
    for start in starts:
        indices = range(start, min(start + UNSEEN_PER_ROUND, n))
        pc.unseen_used = indices.stop  # shown to the candidate now: a second timing pass takes the next ones
        unseen_ms, seen_ms, ref_ms = _unseen_round(timer, pc, model, g, indices, jagged)
        cr.timing.candidate.unseen_ms = min(unseen_ms)
        bound = factor * max(timed_ms, min(seen_ms)) * _work_drift(ref_ms, cr.timing.eager.median_ms) + slack
        if min(unseen_ms) <= bound:
            return
    raise CandidateFailure(
        Status.REJECTED,
        f"unseen-inputs check: calls on inputs it had not seen took {min(unseen_ms):.4g} ms, against "
        f"{timed_ms:.4g} ms for the timed calls and {min(seen_ms):.4g} ms for the fastest call on seen inputs "
        f"around them (allowed {bound:.4g} ms; {len(starts)} rounds of new inputs): results are reused across calls",
    )


# How much more work new contents may hold, by the reference's own time on them, at most (a candidate could make
# the reference's calls slower through what it leaves in the buffers).
MAX_WORK_DRIFT = 2.0


def _work_drift(ref_ms: list[float], eager_ms: float | None) -> float:
    """Where the work depends on the values (lengths held in a tensor, early exits), new contents can hold more
    of it: the reference's time on them over its timed median scales the bound, from 1 to MAX_WORK_DRIFT."""
    if not ref_ms or not eager_ms:
        return 1.0
    return min(max(min(ref_ms) / eager_ms, 1.0), MAX_WORK_DRIFT)


def _unseen_round(
    timer: Timer, pc: PreparedCase, model: torch.nn.Module, g: Guard, indices: range, jagged: bool
) -> tuple[list[float], list[float], list[float]]:
    """One round of the unseen-inputs check: (ms of the call on each held-back set, ms of each call on seen
    inputs made just before and after them, on GPUs ms of the reference on each held-back set). jagged: each
    held-back set goes into buffers of its own (sampled.own_buffers), else into the first timing set's."""
    buffers, seen = pc.timing_sets[0], pc.timing_sets[-1]
    # The new contents go in first where the seen set is another, so the call on them follows a call of the
    # candidate's as every timed call does (on a GPU a kernel's first call after other work on its inputs, the
    # copy, runs slower: benchmarks/h2d_first_touch.py). With one timing set that call would see them first, so
    # they go in after it, and each call on seen inputs follows a rewrite of their contents from a copy kept
    # where the new ones wait: every call of the round then comes after a copy, like for like.
    early = jagged or seen is not buffers
    kept_seen = None if early else trees.map_tensors(lambda x: x.to(_waiting_device(pc), copy=True), seen)

    def on_seen() -> float:
        if kept_seen is not None:
            trees.copy_(buffers, kept_seen)
        if g.host.in_process:
            return timer.time_once(lambda inputs: model(*inputs), seen, "candidate")[0]
        return g.host.clocked(model, seen, keep=False)[0]  # the judge's clock around the request

    unseen_ms, seen_ms, ref_ms = [], [], []
    for k in indices:
        if jagged:
            buffers = sampled.own_buffers(g, pc.unseen_sets[k], pc.timing_sets[0])  # one set at a time
        try:
            with torch.no_grad():
                if early:
                    trees.copy_(buffers, pc.unseen_sets[k])
                before = on_seen()
                if not early:
                    trees.copy_(buffers, pc.unseen_sets[k])
                if g.host.in_process:
                    ms, out = timer.time_once(lambda inputs: model(*inputs), buffers, "candidate")
                    if timer.on_device:
                        precision.reset()  # the reference in the state pinned before the candidate loaded
                        ref_ms.append(timer.time_once(lambda inputs: pc.ref_model(*inputs), buffers, "eager")[0])
                else:  # the output crosses after, off the judge's clock
                    ms, kept = g.host.clocked(model, buffers, keep=True)
                    out = g.host.output(kept)
            _judge_unseen(out, pc, g, k)  # before the next call, which may write the buffers an output aliases
            del out
            with torch.no_grad():
                after = on_seen()
        except BaseException:
            if jagged:  # the verdict raised stands over a failure to let the buffers go
                with contextlib.suppress(CandidateFailure):
                    g.host.forget(buffers)
            raise
        if jagged:
            g.host.forget(buffers)
        unseen_ms.append(ms)
        seen_ms += [before, after]
    return unseen_ms, seen_ms, ref_ms


def _judge_unseen(out: Any, pc: PreparedCase, g: Guard, k: int) -> None:
    # The plan may hold the reference on the host. Brought in only now: before the calls it would take the cached
    # device block the candidate's output reuses, and the output's fresh allocation would be timed.
    ref = memory.to(pc.unseen_refs[k], g.device)
    left = g.host.python_left()
    if left:
        raise CandidateFailure(Status.REJECTED, f"threads check: after a call on unseen inputs, {left}")
    check_output(out, [], pc, g)
    cmp = explain(pc.judge_set(out, ref), out, f"unseen input set {k}")
    if not cmp.ok:
        raise CandidateFailure(
            Status.INCORRECT, f"unseen-inputs check: the output on inputs it had not seen is wrong ({cmp.reason})"
        )


def _waiting_device(pc: PreparedCase) -> torch.device:
    """Where the held-back contents wait (the host under a tight memory plan, else the device)."""
    waiting = trees.tensors(pc.unseen_sets[0]) if pc.unseen_sets else []
    return waiting[0].device if waiting else torch.device("cpu")


def speed_checks(pc: PreparedCase, cr: CaseResult, peaks: Any, g: Guard, result: EvalResult) -> str:
    """GPU targets: the roofline bound and the host-clock cross-check; every target: the review flag."""
    note = speed.review_note(cr)
    g.ran("speedup_review")
    if note:
        result.review.append(f"{cr.shape}: {note}")
    if not for_device(g.device).separate_device():
        return ""
    g.ran("roofline", "host_clock", "l2_persistence")
    if peaks is not None:
        t_mem, t_compute = speed.roofline_parts_ms(pc.min_bytes, pc.flops, peaks)
        bound = max(t_mem, t_compute)
        cr.roofline.floor_ms = bound or None
        cr.roofline.memory_bound = t_mem >= t_compute if bound else None
        cr.roofline.bytes_ms = speed.measured_bytes_ms(pc.min_bytes, peaks)
        why = speed.too_fast(cr, bound)
        if why:
            return f"roofline check: {why}"
    why = speed.host_clock_gap(cr)
    if why:
        return f"host-clock check: {why}"
    if g.host.l2_persisting() > 0:  # in the candidate's process, where it runs there
        return "l2-persistence check: the candidate left a persisting L2 carve-out set"
    return ""


def _versions(device: torch.device) -> dict[str, str]:
    v = {"python": pyplatform.python_version(), "torch": torch.__version__, "harness": harness_version()}
    platform = for_device(device)
    if "triton" in sys.modules or platform.separate_device():
        try:
            import triton

            v["triton"] = triton.__version__
        except ImportError:
            pass
    v.update(platform.build_versions())
    return v


def _device(job: EvalJob) -> torch.device:
    try:
        return activate(job.target).open_device(job.device_index)
    except DeviceMissing as e:
        raise ProblemError(str(e)) from None


JUDGE_SPLIT_DROPPED = (
    "judge split: the candidate ran in the judge's process (the memory plan keeps the trials' inputs on the host; "
    "docs/harness.md, Memory)"
)


def _device_start(job: EvalJob, host: InProcess | Remote, device: torch.device) -> dict[str, float]:
    """Both processes' CUDA contexts, made now that the job has come (a spare worker holds no device memory): the
    candidate's process makes its own meanwhile. The seconds the judge waited for its own (`device_start`) and
    each part of it; none off GPUs and for a build-only job, which needs none."""
    if not for_device(device).separate_device() or job.build_only:
        return {}
    t0 = time.perf_counter()
    if isinstance(host, Remote):
        host.warm_up()
    parts = launches.warm_up(device, profiler=host.in_process)
    return {"device_start": time.perf_counter() - t0, **{f"device_start.{k}": v for k, v in parts.items()}}


def _warm_up_stages(started: dict[str, float], host: InProcess | Remote) -> dict[str, float]:
    """The judge's wait for its CUDA context and, with the candidate in its own process, that process's warm-up
    (its context, Triton, the profiler's first start), which runs beside the judge's load stage (docs/cli.md)."""
    if not started:
        return {}
    theirs = host.warm_up_s if isinstance(host, Remote) else {}
    stages = {**started, **{f"device_start.candidate.{k}": v for k, v in theirs.items()}}
    return {k: round(v, 4) for k, v in stages.items()}


def _peaks(device: torch.device) -> Any:
    if not for_device(device).separate_device():
        return None
    try:
        from kernelevolve.platforms.peaks import peaks

        return peaks(device)
    except Exception:  # noqa: BLE001 - no bound is better than a wrong one
        traceback.print_exc()
        return None


class _Stages:
    """The job's stage report, remembering the current stage: an extension build reports a stage of its own
    (`extension build NAME`, which the evaluator gives the compile deadline), then the one it interrupted."""

    def __init__(self, report: Report) -> None:
        self._report, self.current = report, ""

    def __call__(self, stage: str) -> None:
        self.current = stage
        self._report(stage)

    def build(self, name: str | None) -> None:
        self._report(extension_cache.build_stage(name) if name is not None else self.current)


def run_job(
    job: EvalJob,
    report: Report,
    builds: extension_cache.Channel | None = None,
    end_of_trusted: Callable[[], None] | None = None,
    runner: tuple[int, Connection] | None = None,
) -> EvalResult:
    """builds: the pipes to the harness's build service (eval/builds/extension_cache.py). end_of_trusted: called once
    phase A is over, before any candidate code exists in this process; the evaluator then keeps what phase A wrote
    into the shared caches (eval/launch/sandbox.py, share_trusted_writes) and lets it go on. runner: the candidate's own
    process (eval/worker/runner.py: its pid and the judge's end of its pipe), forked before the job arrived: the
    candidate runs there (without one, with KERNELEVOLVE_GPU_JUDGE=in-process, in this process)."""
    report = _Stages(report)
    device = _device(job)  # a GPU target without one is said before the candidate's process is asked anything
    if runner is not None:
        contention.adopt_orphans()  # before the candidate loads: what it starts stays the judge's to see
        host: InProcess | Remote = Remote(
            runner[0], runner[1], job.candidate_path, job.problem_path, report.build, device
        )
    else:
        host = InProcess(device, job.candidate_path)
    started = _device_start(job, host, device)
    try:
        result = _judge(job, report, builds, end_of_trusted, host, device)
        result.stages = {**_warm_up_stages(started, host), **result.stages}
        return result
    finally:
        host.close(reap=False)


class _Stop(Exception):
    """A stage ends the evaluation: the result as it stands, failed with this status and reason (one path out)."""

    def __init__(self, status: Status, reason: str) -> None:
        super().__init__(reason)
        self.status, self.reason = status, reason


@dataclass
class _Judging:
    """One job's state as it passes the judge's stages: what each stage found that the later ones need."""

    job: EvalJob
    report: _Stages
    host: InProcess | Remote
    device: torch.device
    result: EvalResult
    source: str
    t0: float  # when the judge began: the load stage counts from here
    stages: dict[str, float] = field(default_factory=dict)
    module: Any = None  # the problem, executed
    dtype: Any = None
    prepared: list[PreparedCase] = field(default_factory=list)
    defaults: dict[str, Any] = field(default_factory=dict)
    timer: Timer | None = None
    peaks: Any = None
    use_compile: bool = False
    require_kernel: bool = False
    guard: Guard | None = None
    watched: dict[str, Any] = field(default_factory=dict)
    before: Any = None  # fingerprints and precision state taken before the candidate loaded
    models: list[torch.nn.Module] = field(default_factory=list)

    @contextlib.contextmanager
    def timed(self, name: str) -> Iterator[None]:
        """The one stage clock: its wall seconds land in `stages[name]`, failed or not."""
        t = time.perf_counter()
        try:
            yield
        finally:
            self.stages[name] = time.perf_counter() - t

    def tampered(self, case: dict[str, Any]) -> None:
        """The integrity check after a case: raises _Stop where anything the harness relies on changed."""
        found = _tampered(self.module, case, self.defaults, self.before, self.watched, self.host)
        if found:
            raise _Stop(Status.REJECTED, _tamper_reason(found))


def _judge(
    job: EvalJob,
    report: _Stages,
    builds: extension_cache.Channel | None,
    end_of_trusted: Callable[[], None] | None,
    host: InProcess | Remote,
    device: torch.device,
) -> EvalResult:
    """The judge's stages, in order: load (phase A, trusted), the policy, compile (the candidate loads),
    correctness, timing, the kernel-launch check, and profiling; each fails through `_Stop`."""
    t0 = time.perf_counter()
    others = ""
    if for_device(device).separate_device():
        for_device(device).reset_peak_memory(device)
        others = memory.others_note(*memory.others_bytes(device), job.holders)
    try:
        source, unreadable = read_source(job.candidate_path), ""
    except CandidateLoadError as e:
        source, unreadable = "", str(e)
    j = _Judging(job, report, host, device, _new_result(job, source, device), source, t0)
    if unreadable:
        return _fail(j.result, Status.COMPILE_ERROR, unreadable, j.stages)
    if job.build_only:
        return _build_only(job, j.result, report, builds, host)
    try:
        _load(j, others)
        if end_of_trusted is not None:  # phase B: the candidate
            end_of_trusted()
        _policy(j)
        _compile(j, builds)
        _correctness(j)
        if j.timer is not None:
            with j.timed("timing"):
                _timing(j)
            _after_timing(j)
        _launch_check(j)
    except _Stop as stop:
        return _fail(j.result, stop.status, stop.reason, j.stages)
    return _profile(j).finalize()


def _new_result(job: EvalJob, source: str, device: torch.device) -> EvalResult:
    platform, on = get_platform(job.target), for_device(device)
    languages = detect_languages(source)
    result = EvalResult(
        status=Status.OK,
        correct=False,
        target=job.target,
        languages=languages,
        device=on.device_name(device) if on.separate_device() else pyplatform.machine(),
        problem_hash=source_hash(Path(job.problem_path).read_text()),
        candidate_hash=source_hash(source),
        versions=_versions(device),
    )
    result.interpreted = platform.is_interpreted(languages)
    return result


def _load(j: _Judging, others: str) -> None:
    """Phase A, trusted, before any candidate code exists in this process: the problem, every input set and
    reference, the torch.compile baseline, the memory plan; the load stage counts from the judge's start."""
    job, device, result, report = j.job, j.device, j.result, j.report
    timed = job.timed and not result.interpreted
    precision.apply(job.allow_tf32)
    report("load")
    j.module = exec_problem(job.problem_path)
    j.dtype = problem_dtype(j.module)
    clock = LoadClock(device)
    try:
        j.prepared = prepare(job, j.module, device, j.dtype, random.Random(job.seed), report, timed, clock)
    except Exception as e:
        if not (out_of_memory(e) or isinstance(e, memory.HarnessLimit)):
            raise
        traceback.print_exc()
        j.stages["load"] = time.perf_counter() - j.t0
        raise _Stop(Status.HARNESS_LIMIT, _harness_limit_reason(e, report.current, device)) from None
    peak = for_device(device).peak_memory(device)
    if peak is not None:
        result.harness_peak_bytes = peak
    result.memory = "; ".join(sorted({pc.memory.describe() for pc in j.prepared} - {""}) + ([others] if others else []))
    if others:
        result.review.append(f"{others} when the evaluation began: its timings and memory may be disturbed")
    if j.host.measures and any(pc.memory.trials_on_host for pc in j.prepared):
        j.host.close()  # its trials would cross one at a time: the candidate runs here instead
        j.host = InProcess(device, job.candidate_path)
        result.degraded.append(JUDGE_SPLIT_DROPPED)
    _choose_baseline(j)
    j.timer = Timer(device, TimerConfig(max_iters=job.max_iters, budget_s=job.budget_s)) if timed else None
    j.peaks = _peaks(device) if timed else None
    j.defaults = case_defaults(j.module, shape_cases(j.module))
    j.stages["load"] = time.perf_counter() - j.t0
    j.stages.update({f"load.{part}": seconds for part, seconds in clock.parts.items()})  # parts of load


def _harness_limit_reason(e: Exception, stage: str, device: torch.device) -> str:
    where = f"at {stage} (before the candidate loaded; nothing is known of the candidate)"
    if isinstance(e, memory.HarnessLimit):
        return f"harness limit {where}: {e}"
    return (
        f"harness limit: the harness ran out of {'device' if for_device(device).separate_device() else 'host'} memory "
        f"{where}: the problem's sizes need more than this machine holds for its reference and input sets "
        f"({describe(e, 200)})"
    )


def _choose_baseline(j: _Judging) -> None:
    """Fitness against torch.compile only where asked and its baseline was correct on every case."""
    result, job = j.result, j.job
    compile_notes = {pc.compile_reason for pc in j.prepared if pc.compile_reason}
    result.compile_baseline = "; ".join(sorted(compile_notes))
    j.use_compile = job.baseline == "compile" and all(pc.compile_ok for pc in j.prepared)
    result.baseline = "compile" if j.use_compile else "eager"
    if job.baseline == "compile" and not j.use_compile:
        result.compile_baseline = result.compile_baseline or "torch.compile baseline not run on this target"
        result.compile_baseline += "; fitness uses the eager baseline"


def _policy(j: _Judging) -> None:
    """The target runs the candidate's languages, and under the kernel policy its source calls no torch compute."""
    platform = get_platform(j.job.target)
    languages = j.result.languages
    unsupported = platform.unsupported(languages)
    if unsupported:
        raise _Stop(Status.REJECTED, f"{', '.join(unsupported)} kernels cannot run on the {j.job.target} target")
    j.require_kernel = policy_default(platform) if j.job.require_kernel is None else j.job.require_kernel
    if not j.require_kernel:
        return
    j.result.checks.append("kernel_policy")
    broken = violations(j.source)
    if languages == ["pytorch"]:
        broken.append("no kernel language: no Triton kernel and no C++/CUDA extension in the candidate")
    if broken:
        more = f" (and {len(broken) - 3} more)" if len(broken) > 3 else ""
        raise _Stop(Status.REJECTED, "kernel policy: " + "; ".join(broken[:3]) + more)


def _finished_outputs(host: Remote, g: Guard) -> None:
    """cpu: whether the judge reads each call's output in the candidate's process right after its reply
    (eval/worker/finished.py), or the result says why not."""
    if host.reader.works:
        g.ran("finished_outputs")
    else:
        g.review.append(
            f"the judge cannot read the candidate's process's memory here ({host.reader.why_not}): a call that "
            'replies before its work is done is not caught (docs/harness.md, "Calls alike")'
        )


def _compile(j: _Judging, builds: extension_cache.Channel | None) -> None:
    """The candidate loads where it runs, its C++/CUDA extensions built by the harness once per source
    (eval/builds/extension_cache.py); on a GPU with the candidate in its own process the proof block's own cost
    is calibrated first, while no candidate code runs (eval/worker/proof.py)."""
    t1 = time.perf_counter()
    j.report("compile")
    j.watched = {"problem": j.module, "timer": j.timer, **harness_modules()}
    j.before = (fingerprint(j.watched), precision.pin())
    result, host = j.result, j.host
    protected = protected_spans(j.prepared)
    j.guard = Guard(
        j.device, j.dtype, host, protected, j.job.candidate_path, j.require_kernel, result.checks, result.review,
        LoadClock(j.device),
    )  # fmt: skip
    try:
        compiled = any(pc.compiled is not None for pc in j.prepared)
        if host.measures:
            with j.timed("calibration"):  # the harness's cost, not the candidate's compile
                host.block_overhead = proof.calibrate(host, j.device)
        elif isinstance(host, Remote):  # cpu: the cost of a request, before any candidate code serves one
            host.calibrate()
            _finished_outputs(host, j.guard)
        install = lambda: extension_cache.install(report=j.report.build, channel=builds)  # noqa: E731
        left = host.load(j.job.allow_tf32, install, compiled)
    except CandidateLoadError as e:  # the candidate's mistake, all said in the reason: no harness traceback
        raise _Stop(Status.COMPILE_ERROR, str(e)) from None
    except CandidateFailure as e:  # the candidate's process died while it loaded
        raise _Stop(e.status, f"loading the candidate: {e.reason}") from None
    j.stages["compile"] = j.stages["compile.load"] = time.perf_counter() - t1 - j.stages.get("calibration", 0.0)
    j.guard.ran("threads")
    if left:
        raise _Stop(Status.REJECTED, f"threads check: after loading the candidate, {left}")


def _correctness(j: _Judging) -> None:
    """Every case's trials through the checks (eval/worker/checking.py); its first call per case (JIT
    compilation) counts in the compile stage."""
    t2 = time.perf_counter()
    first_calls = 0.0
    for ci, pc in enumerate(j.prepared):
        first_calls += _correctness_case(j, ci, pc)
    j.guard.ran("integrity")
    j.stages["compile"] += first_calls
    j.stages["compile.first_calls"] = first_calls
    j.stages["correctness"] = time.perf_counter() - t2 - first_calls
    bad = [f"case {i} {c.shape}: {c.reason}" for i, c in enumerate(j.result.cases) if not c.correct]
    if bad:
        raise _Stop(Status.INCORRECT, bad[0] + (f" (and {len(bad) - 1} more cases)" if len(bad) > 1 else ""))


def _correctness_case(j: _Judging, ci: int, pc: PreparedCase) -> float:
    """One case checked; returns the seconds of its first call."""
    j.report(f"correctness case {ci}")
    cr = CaseResult(
        shape=pc.shape,
        correct=False,
        accuracy=Accuracy(
            trials=[t.distribution for t in pc.trials],
            ref_max_abs=pc.ref_max_abs,
            atol=pc.criterion.atol,
            rtol=pc.criterion.rtol,
            rule=pc.criterion.describe(),
        ),
        timing=Timings(compile=CompileTimes(correct=pc.compile_ok)),
        roofline=Roofline(min_bytes=pc.min_bytes or None),
    )
    j.result.cases.append(cr)
    bind_case(j.module, pc.case, j.defaults)  # a reference whose forward reads the constants runs here too
    try:
        if not j.host.in_process:  # the sets the candidate may see, shared with its process
            shown = j.host.adopt_many([trial.inputs for trial in pc.trials] + pc.timing_sets)
            for trial, inputs in zip(pc.trials, shown):
                trial.inputs = inputs
            pc.timing_sets = shown[len(pc.trials) :]
        model, verdict, first_call_s = check_case(pc, ci, j.guard, cr)
    except CandidateFailure as e:
        raise _Stop(e.status, f"case {ci} {pc.shape}: {e.reason}") from None
    j.guard.ran("correctness")
    cr.correct, cr.accuracy.max_abs_err, cr.accuracy.max_rel_err = verdict.ok, verdict.max_abs_err, verdict.max_rel_err
    cr.accuracy.norm_err, cr.accuracy.error_ratio = verdict.norm_err, verdict.error_ratio
    cr.reason = "; ".join([verdict.reason, *pc.notes]).strip("; ")
    j.models.append(model)
    j.tampered(pc.case)
    return first_call_s


def _timing(j: _Judging) -> None:
    """Every case timed against its baselines, then the speed bounds and the integrity check."""
    for ci, (pc, model, cr) in enumerate(zip(j.prepared, j.models, j.result.cases)):
        if not pc.timed:  # CHECK_CASES: correctness alone
            cr.timed = False
            continue
        j.report(f"timing case {ci}")
        bind_case(j.module, pc.case, j.defaults)
        waited = _time_case(j, ci, pc, model, cr)
        base, candidate = cr.timing.of("compile" if j.use_compile else "eager"), cr.timing.candidate
        cr.speedup = base.median_ms / candidate.median_ms if base.median_ms and candidate.median_ms else None
        if base.graph_ms and candidate.graph_ms:
            cr.speedup_graph = base.graph_ms / candidate.graph_ms
        if not for_device(j.device).separate_device() and (note := waited.note()):
            j.result.review.append(f"{cr.shape}: {note}")
        why = speed_checks(pc, cr, j.peaks, j.guard, j.result)
        if why:
            raise _Stop(Status.REJECTED, f"case {ci} {pc.shape}: {why}")
        j.tampered(pc.case)


def _time_case(j: _Judging, ci: int, pc: PreparedCase, model: Any, cr: CaseResult) -> RunQueueWait:
    """One case's timing pass and its checks; the cpu target's timer is the host clock: a pass the host kept
    waiting, or whose timing cross-check failed, is timed once more, from the sets' first contents (a pass rotates
    them and the unseen-inputs check overwrites one), and the second pass's verdict stands. Returns the pass's wait
    for a CPU."""
    g, timer, floor = j.guard, j.timer, j.job.copy_floor
    try:
        saved = None if for_device(j.device).separate_device() else _copies(pc.timing_sets)
        why, failure, waited = _timed(timer, pc, model, cr, g, floor)
        if saved is not None and (again := _second_pass(pc, failure, waited)):
            _restore(pc.timing_sets, saved)
            why, failure, waited = _timed(timer, pc, model, cr, g, floor)
            j.result.review.append(f"{cr.shape}: timed twice: during the first timing, {again}")
        if failure is not None:
            raise contention.verdict(failure, cr.reliability.contention)
    except CandidateFailure as e:
        raise _Stop(e.status, f"case {ci} {pc.shape}: {e.reason}") from None
    except Exception as e:  # noqa: BLE001
        traceback.print_exc()
        failed = failure_of(e, "forward raised while timed:")
        raise _Stop(failed.status, f"case {ci} {pc.shape}: {failed.reason}") from None
    if why:
        raise _Stop(Status.INCORRECT, f"case {ci} {pc.shape}: {why}")
    return waited


def _second_pass(pc: PreparedCase, failure: CandidateFailure | None, waited: RunQueueWait) -> str:
    """Why a cpu case is timed once more ('' for not): the host kept the pass waiting (and it passed, or failed
    the unseen-inputs check with sets never shown left for a second), or its timing cross-check failed. A request's
    own cost varies from pass to pass on a shared host (an honest 0.07 ms ReLU once saw every bracket of its pass
    0.09 ms over its report, with no contention measured), while a forged clock shows in every pass."""
    if failure is not None and failure.reason.startswith("timing cross-check"):
        return failure.reason
    busy = waited.note()
    fresh = len(pc.unseen_sets) > pc.unseen_used  # a retry's unseen check needs sets never shown
    unseen_failed = failure is not None and failure.reason.startswith("unseen-inputs check")
    return busy if busy and (failure is None or (unseen_failed and fresh)) else ""


def _after_timing(j: _Judging) -> None:
    """The timing stage's parts, and no thread of the candidate's left working after it."""
    j.stages.update({f"timing.{part}": seconds for part, seconds in j.guard.clock.parts.items()})
    try:
        busy = j.host.threads()
    except CandidateFailure as e:
        raise _Stop(e.status, f"after timing: {e.reason}") from None
    if busy:
        raise _Stop(Status.REJECTED, f"threads check: after timing, {busy}")


def _launch_check(j: _Judging) -> None:
    """cuda, under the kernel policy: the profiler must show one of the candidate's own kernels (the profiler's
    first start in the worker is paid here)."""
    if not (j.require_kernel and for_device(j.device).separate_device()):
        return
    with j.timed("launch_check"):
        bind_case(j.module, j.prepared[0].case, j.defaults)
        with memory.resident(j.prepared[0].trials[0], j.device):  # the plan may hold it on the host
            why = _device_kernel_check(j.prepared[0], j.models[0], j.source, j.guard)
        bind_case(j.module, {}, j.defaults)
    if why:
        raise _Stop(Status.REJECTED, why)


def _profile(j: _Judging) -> EvalResult:
    """Profiling for the memory agent (cuda, timed, unless off), after every check: never part of the verdict."""
    j.result.stages = j.stages
    if j.timer is None or not for_device(j.device).separate_device() or j.job.profile == "off":
        return j.result
    bind_case(j.module, j.prepared[0].case, j.defaults)
    first = j.prepared[0].trials[0]
    options = {
        "problem_path": j.job.problem_path,
        "candidate_path": j.job.candidate_path,
        "seed": j.job.seed,
        "device_index": j.job.device_index,
        "own_names": launches.kernel_names(j.source),
    }
    with memory.resident(first, j.device):
        result = profiled(j.result, lambda: j.host.profile(j.job.profile, j.models[0], first.inputs, options), j.stages)
    bind_case(j.module, {}, j.defaults)
    result.stages = j.stages
    return result


OWN_SHARE_REVIEW = 0.5  # below this share of device time in its own kernels, a candidate is listed for review


def profiled(result: EvalResult, collect: Callable[[], Any], stages: dict[str, float]) -> EvalResult:
    """Profiling for the memory agent, after every check: best effort, never part of the verdict. The verdict is
    frozen first (an immutable string): the candidate runs again here, after the last integrity check, and
    whatever it might do to the result object meanwhile is discarded; only the profile and a review note come
    back. collect: eval/worker/profiling.collect over the first case, where the candidate runs."""
    frozen = result.model_dump_json()
    try:
        t0 = time.perf_counter()
        with torch.no_grad():
            profile = collect()
        stages["profile"] = time.perf_counter() - t0
    except BaseException:  # noqa: BLE001
        traceback.print_exc()
        return EvalResult.model_validate_json(frozen)
    verdict = EvalResult.model_validate_json(frozen)
    verdict.profile = profile if isinstance(profile, dict) else None
    share = (verdict.profile or {}).get("own_share")
    if isinstance(share, (int, float)) and share < OWN_SHARE_REVIEW:
        verdict.review.append(
            f"the candidate's own kernels take {share:.0%} of forward's device time: most of the work runs in "
            "PyTorch's or a library's kernels"
        )
    return verdict


def _device_kernel_check(pc: PreparedCase, model: torch.nn.Module, source: str, g: Guard) -> str:
    """cuda: the device kernels one forward call runs must include one the candidate defines."""
    names = launches.kernel_names(source)
    inputs = pc.trials[0].inputs

    kernels = g.host.device_kernels(model, inputs)
    if kernels is None:
        return ""  # the profiler does not work here: the launch monitor's verdict stands
    g.ran("device_kernels")
    if not launches.ran_candidate_kernel(kernels, names):
        shown = ", ".join(sorted(set(kernels))[:4]) or "none"
        return f"kernel-launch check: no device kernel defined by the candidate ran (profiled: {shown})"
    return ""


def _tampered(
    module: Any,
    case: dict[str, Any],
    defaults: dict[str, Any],
    before: tuple[Any, Any],
    watched: dict[str, Any],
    host: InProcess | Remote,
) -> list[str]:
    """Names re-bound since the fingerprint, and precision settings changed, in this process and in the
    candidate's own. The case's constants are the harness's own binding while the case runs: they must still be
    the very objects it bound, before the defaults go back for the fingerprint."""
    moved = [f"problem.{k}" for k, v in case.items() if getattr(module, k, None) is not v]
    bind_case(module, {}, defaults)
    prints, policy = before
    return moved + changed(prints, watched) + precision.changed(policy) + host.tampered()


def _tamper_reason(names: list[str]) -> str:
    policy = [n for n in names if n in precision.NAMES]
    if policy:
        return (
            f"precision policy: the candidate changed {', '.join(policy)}; TF32 in a float32 problem is the run's "
            "choice (--allow-tf32), not the kernel's: state the precision in the kernel itself (tl.dot's "
            "input_precision) and compute in float32 unless the run allows TF32"
        )
    state = [n for n in names if n.split(" ", 1)[0] in precision.GLOBAL_NAMES]
    if state:
        return (
            f"global state check: the candidate left torch's process-wide state changed ({', '.join(state)}): it "
            "would change the reference's and the timer's calls too"
        )
    hooks = [n.split(".", 1)[1] for n in names if n.startswith(integrity.HOOKS + ".")]
    if hooks:
        return (
            f"integrity check: the candidate left a global hook or mode in place ({', '.join(hooks[:3])}): it "
            "would run inside the reference's and the timer's calls too"
        )
    shown = ", ".join(names[:5]) + (f" and {len(names) - 5} more" if len(names) > 5 else "")
    return f"integrity check: the candidate re-bound {shown}"


def _build_only(
    job: EvalJob, result: EvalResult, report: _Stages, builds: extension_cache.Channel | None, host: InProcess | Remote
) -> EvalResult:
    """The candidate imported, nothing judged: its C++/CUDA extensions are built into the extension cache, where
    its evaluation finds them (a build beside another evaluation instead of within its own)."""
    t0 = time.perf_counter()
    report("compile")
    try:
        host.load(job.allow_tf32, lambda: extension_cache.install(report=report.build, channel=builds))
    except CandidateLoadError as e:
        return _fail(result, Status.COMPILE_ERROR, str(e), {"compile": time.perf_counter() - t0})
    except CandidateFailure as e:
        return _fail(result, e.status, f"loading the candidate: {e.reason}", {"compile": time.perf_counter() - t0})
    return _fail(result, Status.OK, "built only: not evaluated", {"compile": time.perf_counter() - t0})


def _fail(result: EvalResult, status: Status, reason: str, stages: dict[str, float]) -> EvalResult:
    result.status = status
    result.reason = reason
    result.stages = stages
    return result.finalize()
