"""The candidate's process: forked from the worker before any job exists in it, it loads the candidate and runs
it on request, and nothing else. The judge (the worker) keeps the references, the held-back inputs, the seeds,
the comparator, the timer's samples and the result channel.

Here run the checks that must run in the candidate's own process (poisoning, threads, structure, the launch
monitor, hooks and precision after each case), and on a GPU the timing pass. The split and what it guarantees:
docs/harness.md ("The judge's process (cpu target)", "The judge's process on GPU targets"); the trace and the
reply protocol (read with eval/worker/replies.py): docs/architecture.md ("Evaluating one candidate", "Modules").
"""

from __future__ import annotations

import contextlib
import os
import resource
import sys
import time
import traceback
from multiprocessing.connection import Connection
from typing import Any

import torch

from kernelevolve.eval.builds import extension_cache
from kernelevolve.eval.worker import finished, integrity, l2, launches, precision, shared, trees
from kernelevolve.eval.worker.checking import CandidateFailure, failure_of
from kernelevolve.eval.worker.correctness import compare
from kernelevolve.eval.worker.launches import LaunchMonitor
from kernelevolve.eval.worker.outputs import aliased, not_plain, spans
from kernelevolve.eval.worker.poison import Poisoned
from kernelevolve.eval.worker.prepare import describe, sync
from kernelevolve.eval.worker.series import Recorder, Series, copy_of, measure
from kernelevolve.eval.worker.threads import ThreadWatch
from kernelevolve.eval.worker.timing import Timer, TimerConfig, capture
from kernelevolve.platforms import for_device
from kernelevolve.problem.candidate import CandidateLoadError, load_candidate
from kernelevolve.problem.inputs import build_model
from kernelevolve.problem.problem import bind_case, case_defaults, exec_problem, shape_cases
from kernelevolve.result import Status

LOAD_ERROR = "load_error"
_NOT_SHAPED = "unseen-inputs check: an output of the judge's block of calls is not shaped as the reference's"


class CandidateProcess:
    """The state of the candidate's side: its module, a model per case, the input sets it was shown."""

    def __init__(
        self, conn: Connection, builds: extension_cache.Channel | None, device: torch.device | None = None
    ) -> None:
        self.conn, self.builds = conn, builds
        self.device = device or torch.device("cpu")
        self.timers: dict[Any, Timer] = {}
        self.retime: Any = None
        self.block: Any = None
        self.models: dict[int, Any] = {}
        self.sets: dict[int, Any] = {}
        self.last: dict[int, Any] = {}
        self.folder = ""
        self.path = ""
        self.cand: Any = None
        self.watch: ThreadWatch | None = None
        self.before: tuple[Any, Any] | None = None
        self.problem: Any = None
        self.poison: list[int] = []  # do_checking: the output sizes poisoned around each call, and the monitor
        self.monitor = False
        self.defaults: dict[str, Any] = {}

    def serve(self) -> None:
        while True:
            try:
                msg = self.conn.recv()
            except (EOFError, OSError):
                return  # the judge is gone
            kind, args = msg[0], msg[1:]
            try:
                reply = ("ok", getattr(self, f"do_{kind}")(*args))
            except CandidateFailure as e:
                reply = ("fail", e.status.value, e.reason)
            except CandidateLoadError as e:  # the candidate's mistake, all said in the reason: no harness traceback
                reply = (LOAD_ERROR, str(e))
            except BaseException as e:  # noqa: BLE001 - SystemExit and KeyboardInterrupt from a candidate too
                traceback.print_exc()
                failed = failure_of(e, f"{kind} raised")
                reply = ("fail", failed.status.value, failed.reason)
            try:
                self.conn.send(reply)
            except Exception as e:  # noqa: BLE001 - a reply that cannot be pickled: said instead
                traceback.print_exc()
                self.conn.send(
                    ("fail", Status.RUNTIME_ERROR.value, f"{kind}: its reply could not be sent: {describe(e)}")
                )
            # After the reply, outside every clock's bracket, after every request alike: the next reference call
            # runs in the state pinned before the candidate loaded; what was changed rejects it (do_tampered).
            precision.reset()

    # ---- requests ----

    def do_load(self, path: str, allow_tf32: bool, folder: str, problem_path: str, compiled: bool) -> str:
        """The problem (its reference is timed here, beside the candidate, as one process times both), then the
        candidate's module; returns what the threads check found after its import ('' if nothing). compiled: a
        torch.compile baseline will be timed here: dynamo's first call patches torch (Module.__init__, manual_seed),
        so one trivial compiled call comes before the fingerprints."""
        self.path, self.folder = path, folder
        precision.apply(allow_tf32)
        self.problem = exec_problem(problem_path)
        self.defaults = case_defaults(self.problem, shape_cases(self.problem))
        if compiled:
            torch.compile(torch.nn.Identity(), backend="eager")(torch.ones(1))
        extension_cache.install(report=self._report_build, channel=self.builds)
        for_device(
            self.device
        ).device_count()  # torch caches it in a module global on first use: before the fingerprints
        self.watch = ThreadWatch()
        self.before = (integrity.fingerprint(integrity.harness_modules()), precision.pin())
        self.cand = load_candidate(path)
        return self.watch.check()

    def do_model(self, key: int, init: list[Any], seed: int, dtype: torch.dtype, state: Any) -> None:
        reference = shared.open_spec(state) if state is not None else None
        try:
            self.models[key] = build_model(
                self.cand.ModelNew, init, seed, dtype, self.device, reference_state=reference
            )
        except Exception as e:  # noqa: BLE001
            raise failure_of(e, "constructing ModelNew failed:") from e

    def do_reference(
        self, key: Any, case: dict[str, Any], init: list[Any], seed: int, dtype: torch.dtype, state: Any, compiled: bool
    ) -> None:
        """The problem's Model for one case, with the judge's parameters, under `key` (and torch.compile of it
        under ("compile", key)); the case's constants bound while it is timed."""
        bind_case(self.problem, case, self.defaults)
        reference = shared.open_spec(state) if state is not None else None
        model = build_model(self.problem.Model, init, seed, dtype, self.device, reference_state=reference)
        self.models[key] = model
        if compiled:
            self.models[("compile", key)] = torch.compile(model)

    def do_inputs(self, pairs: list[tuple[int, Any]]) -> None:
        """Input sets shared by the judge; the pages of host ones are mapped here at once, so no call pays for
        their first touch (a held-back set's buffers are shared before their contents are copied in)."""
        for key, spec in pairs:
            self.sets[key] = shared.open_spec(spec)
            for t in trees.tensors(self.sets[key]):
                if t.is_cpu and t.numel():
                    pages = torch.empty(0, dtype=torch.uint8).set_(t.untyped_storage())
                    int(pages[:: resource.getpagesize()].sum())

    def do_forget(self, keys: list[int]) -> None:
        for k in keys:
            self.sets.pop(k, None)
            self.last.pop(k, None)

    def do_checking(self, poison: list[int], monitor: bool) -> None:
        """The conditions of the correctness trials' calls (poisoned memory of the output sizes, the launch monitor)
        for the calls that follow, till the judge clears them: a state of this process, never a field of a call's
        request, so the call's request, path and reply stay those of every other call (issue 45, class 3)."""
        self.poison, self.monitor = [int(n) for n in poison], bool(monitor)

    def do_run(self, model: Any, key: int) -> tuple[float, int, list[str] | None, list[Any]]:
        """Every call the judge makes of a model on an input set, whatever it makes of it (a correctness trial, a
        timed call, a call of the unseen-inputs check): one request, one path, one reply, so that nothing in this
        process tells one kind of call from another (docs/harness.md, "Calls alike"). Returns (ms of the call on
        the host clock, with its synchronize; the minor page faults it took; the candidate kernels the launch
        monitor saw, or None where it is off; where its output lies, which the judge reads before its next request:
        eval/worker/finished.py). A candidate's output is kept as its set's last till `do_take`."""
        fn, inputs = self.models[model], self.sets[key]
        monitor = LaunchMonitor(self.path) if self.monitor else None
        with Poisoned(self.device, self.poison) if self.poison else contextlib.nullcontext():
            f0 = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
            t0 = time.perf_counter()
            try:
                with monitor if monitor is not None else contextlib.nullcontext(), torch.no_grad():
                    out = fn(*inputs)
                sync(self.device)
            except Exception as e:  # noqa: BLE001
                traceback.print_exc()
                raise failure_of(e, "forward raised") from e
            ms = (time.perf_counter() - t0) * 1e3
            faults = resource.getrusage(resource.RUSAGE_SELF).ru_minflt - f0
        if not isinstance(model, tuple):  # the candidate's (the baselines' are keyed ("ref", case) and the like)
            self.last[key] = out
        place = finished.where(out)
        del out
        left = self.watch.python_left()
        if left:
            raise CandidateFailure(Status.REJECTED, f"threads check: after forward returned, {left}")
        return ms, faults, (monitor.seen if monitor is not None else None), place

    def do_take(self, keys: list[int], may_alias: bool) -> dict[int, tuple[Any, str]]:
        """The last output of each set under `keys` (those it has), each then let go: (its spec, or None where it
        shares memory with the set's inputs; what it shares, '' for nothing or where may_alias)."""
        found = {}
        for k in keys:
            if k not in self.last:
                continue
            out = self.last.pop(k)
            self._plain(out, "after forward returned")
            alias = "" if may_alias else aliased(out, spans(self.sets[k], "input {i}"))
            found[k] = (None if alias else self._share(out)), alias
        return found

    def do_warm_up(self) -> dict[str, float]:
        """The CUDA context, Triton's driver and the profiler's first start, asked for as the job arrives (the judge
        does not wait: it prepares the inputs meanwhile); a failure here shows in the first real request. The
        seconds of each part: no candidate code has run in this process yet."""
        try:
            return launches.warm_up(self.device, profiler=True)
        except Exception:  # noqa: BLE001
            traceback.print_exc()
            return {}

    def do_ping(self) -> None:
        """An empty request: the judge's clock around it is the cost of a request itself (on a GPU, with the
        synchronize every request that runs calls ends with)."""
        sync(self.device)

    def do_series(
        self, model: int, ref: Any, keys: list[int], compiled: bool, copy_bytes: int, config: TimerConfig
    ) -> Series:
        """GPU: one case's timing pass (eval/worker/series.py) over the sets under `keys`, the reference under
        `ref` (and its torch.compile) beside the candidate; the candidate's last output per set shared."""
        sets = [self.sets[k] for k in keys]
        rec = Recorder(sets)
        cand, reference = self.models[model], self.models[ref]
        fns: dict[str, Any] = {"eager": lambda inp: reference(*inp), "candidate": rec.wrap(lambda inp: cand(*inp))}
        if compiled:
            fns["compile"] = lambda inp, c=self.models[("compile", ref)]: c(*inp)
        timer = self._timer(config)

        def after_call(name: str) -> None:
            if name == "candidate":
                precision.reset()  # before the next reference call, outside the timer's bracket
                left = self.watch.python_left()
                if left:
                    raise CandidateFailure(Status.REJECTED, f"threads check: after a timed call, {left}")

        copy = copy_of(copy_bytes, self.device) if copy_bytes else None
        stats, rest = measure(timer, fns, sets, after_call, rec.midway, copy)
        del copy
        host, graphs = rest()

        def retime() -> dict[str, Any]:
            with torch.no_grad():
                return timer.time_host(fns, sets)

        self.retime = retime
        last = {}
        for k, out in rec.outputs().items():
            self._plain(out, "after a timed call")
            last[k] = self._share(out)
        return Series(stats, host, graphs, last)

    def do_retime_host(self) -> dict[str, Any]:
        return self.retime()

    def _timer(self, config: TimerConfig) -> Timer:
        key = tuple(sorted(vars(config).items()))
        if key not in self.timers:  # one flush buffer per process, not per case
            self.timers = {key: Timer(self.device, config)}
        return self.timers[key]

    def do_block(self, model: int, keys: list[int], slot_keys: list[int] | None = None) -> tuple[str, list[Any]]:
        """GPU, the judge's proof block: warms the candidate up on the sets under `keys` (they hold contents it
        has seen) and captures one CUDA graph of a call on each; ('graph', or 'plain' where capture fails and the
        calls are then launched one by one, and the memory each call's output is written to, shared in place: the
        judge reads it before its clock around the block stops). slot_keys: the judge's own memory for the
        outputs (jagged sets, outputs shaped by the values), where the sets hold nothing yet: no call before the
        block, which launches its calls one by one."""
        cand = self.models[model]
        sets = [self.sets[k] for k in keys]
        if slot_keys is not None:
            calls = [lambda inputs=inputs: cand(*inputs) for inputs in sets]
            self.block = {"calls": calls, "outs": [self.sets[k] for k in slot_keys]}
            return "plain", []
        with torch.no_grad():
            eager = [trees.clone(cand(*inputs)) for inputs in sets]
            sync(self.device)
            try:
                graph, outs = capture(lambda: [cand(*inputs) for inputs in sets], self.device, warm_ups=1)
                for t in trees.tensors(outs):  # written during capture by work the graph did not take (a thread)?
                    t.fill_(float("nan") if t.is_floating_point() else -1)
                graph.replay()
                sync(self.device)
                # The replay must reproduce the calls' own outputs (room for a reduction's order, where they are
                # not equal element for element); a mode decision only: the judge compares every output of the block
                # itself.
                if not all(_same(a, b) or compare(a, b, 1e-5, 1e-3, norm=False).ok for a, b in zip(outs, eager)):
                    raise RuntimeError("the graph's outputs differ from the calls' own")
                self.block = {"graph": graph, "outs": outs}
                mode = "graph"
            except Exception:  # noqa: BLE001 - capture is best effort: the calls are launched one by one instead
                traceback.print_exc()
                sync(self.device)
                calls = [lambda inputs=inputs: cand(*inputs) for inputs in sets]
                self.block = {"calls": calls, "outs": eager}  # each call's output is copied into its slot
                mode = "plain"
        for out in self.block["outs"]:
            self._plain(out, "in the judge's block of calls")
        return mode, list(self.block["outs"])  # sent by handle, in place

    def do_block_run(self) -> float | None:
        """The block once (the judge's clock around this request, and the judge's read of the outputs); on a GPU,
        ms between events recorded around it here, which the judge logs beside its own clock and never trusts."""
        events, event = self.block.get("events"), for_device(self.device).event_factory()
        if events is None and event is not None:
            events = self.block["events"] = [event(enable_timing=True) for _ in range(2)]
        if events:
            events[0].record()
        with torch.no_grad():
            if "graph" in self.block:
                self.block["graph"].replay()
            else:
                for slot, call in zip(self.block["outs"], self.block["calls"]):
                    out = call()
                    if isinstance(slot, torch.Tensor) and isinstance(out, torch.Tensor):
                        if out.shape != slot.shape or out.dtype != slot.dtype:
                            raise CandidateFailure(Status.INCORRECT, _NOT_SHAPED)
                        slot.copy_(out)  # the common case, without flattening trees on the clock
                    elif trees.same_layout([slot, out]):
                        trees.copy_(slot, out)
                    else:
                        raise CandidateFailure(Status.INCORRECT, _NOT_SHAPED)
        if events:
            events[1].record()
        sync(self.device)
        left = self.watch.python_left()
        if left:
            raise CandidateFailure(Status.REJECTED, f"threads check: after the judge's block of calls, {left}")
        return events[0].elapsed_time(events[1]) if events else None

    def do_tick(self) -> None:
        """One tiny kernel and a synchronize, between events as a block's run is: the judge times its block's
        bracket around this (before the candidate loads) to know what the bracket costs without the block."""
        event = for_device(self.device).event_factory()
        events = [event(enable_timing=True) for _ in range(2)] if event is not None else []
        if events:
            events[0].record()
        torch.ones(1, device=self.device).add_(1)
        if events:
            events[1].record()
        sync(self.device)

    def do_block_end(self) -> None:
        self.block = None

    def do_l2_persisting(self) -> int:
        """GPU: the persisting-L2 carve-out this process's context holds (the l2-persistence check)."""
        return l2.persisting_bytes()

    def do_device_kernels(self, model: int, key: int) -> list[str] | None:
        """GPU: the device kernels one call runs (the kernel-launch check)."""
        fn, inputs = self.models[model], self.sets[key]

        def call() -> None:
            with torch.no_grad():
                fn(*inputs)

        return launches.device_kernels(call, self.device)

    def do_profile(self, mode: str, model: int, key: int, options: dict[str, Any]) -> dict[str, Any] | None:
        """GPU: profiling for the memory agent (best effort; never part of the verdict)."""
        from kernelevolve.eval.worker import profiling

        fn, inputs = self.models[model], self.sets[key]
        with torch.no_grad():
            return profiling.collect(mode, self.cand, lambda: fn(*inputs), self.device, **options)

    def do_threads(self, native_only: bool) -> str:
        return self.watch.native_busy() if native_only else self.watch.check()

    def do_tampered(self) -> list[str]:
        """Harness names re-bound in this process, global hooks left, precision settings changed."""
        prints, policy = self.before
        return integrity.changed(prints, integrity.harness_modules()) + precision.changed(policy)

    # ---- helpers ----

    def _plain(self, out: Any, when: str) -> None:
        plain_output(out, self.watch, when)

    def _share(self, out: Any) -> Any:
        leaves = trees.tensors(out)
        if not for_device(self.device).separate_device() and any(not t.is_cpu for t in leaves):
            raise CandidateFailure(Status.REJECTED, "structure check: an output is not on the host (cpu target)")
        return shared.send(out, self.folder)

    def _report_build(self, name: str | None) -> None:
        self.conn.send(("stage", name))


def _same(a: Any, b: Any) -> bool:
    """Whether two outputs hold equal tensors, element for element (one comparison each, cheaper than the
    comparator's; NaNs differ here and go to the comparator)."""
    return trees.same_layout([a, b]) and all(torch.equal(s, t) for s, t in zip(trees.tensors(a), trees.tensors(b)))


def checked_call(
    model: Any, inputs: Any, device: torch.device, poison: list[int], monitor_path: str, watch: ThreadWatch
) -> tuple[Any, float, list[str] | None]:
    """One forward call in poisoned memory, then the checks that must run where the candidate runs: no thread left
    running, a plain output. monitor_path: the candidate's file, to watch the call for its kernels ('' not to).
    Returns (output, seconds, the kernels the monitor saw or None)."""
    monitor = LaunchMonitor(monitor_path) if monitor_path else None
    with Poisoned(device, poison):
        t0 = time.perf_counter()
        try:
            with torch.no_grad():
                if monitor is not None:
                    with monitor:
                        out = model(*inputs)
                else:
                    out = model(*inputs)
            sync(device)
        except Exception as e:  # noqa: BLE001
            traceback.print_exc()
            raise failure_of(e, "forward raised") from e
        seconds = time.perf_counter() - t0
    plain_output(out, watch, "after forward returned")
    return out, seconds, (monitor.seen if monitor is not None else None)


def plain_output(out: Any, watch: ThreadWatch, when: str) -> None:
    """No Python thread of the candidate's left alive, and a plain output; raises CandidateFailure."""
    left = watch.python_left()
    if left:
        raise CandidateFailure(Status.REJECTED, f"threads check: {when}, {left}")
    why = not_plain(out)
    if why:
        raise CandidateFailure(Status.REJECTED, f"structure check: {why}")


def start(
    builds: extension_cache.Channel | None,
    close: list[int],
    device: torch.device | None = None,
) -> tuple[int, Connection]:
    """Forks the candidate's process (before any job exists in this one, and before CUDA does: a forked process
    can make a CUDA context of its own only then): (its pid, the judge's end of the pipe). close: descriptors the
    child must not keep (the result channel). device: a GPU the candidate runs on (default the host); the child makes
    its CUDA context when the judge asks (`do_warm_up`), once the job has arrived."""
    import multiprocessing

    judge_end, candidate_end = multiprocessing.Pipe(duplex=True)
    pid = os.fork()
    if pid == 0:  # the candidate's process
        try:
            judge_end.close()
            for fd in close:
                os.close(fd)
            devnull = os.open(os.devnull, os.O_RDONLY)
            os.dup2(devnull, 0)  # the job arrives on the judge's stdin, never here
            os.close(devnull)
            sys.stdin = open(os.devnull)  # noqa: SIM115 - replaces the inherited stream for good
            CandidateProcess(candidate_end, builds, device).serve()
        finally:
            os._exit(0)
    candidate_end.close()
    return pid, judge_end
