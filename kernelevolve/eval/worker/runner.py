"""The candidate's process: forked from the worker before any job exists in it, it loads the candidate and runs
it on request, and nothing else. The judge (the worker) keeps the references, the held-back inputs, the seeds,
the comparator, the timer's samples and the result channel; it sends this process the inputs it may see as
shared files (eval/worker/shared.py) and gets outputs back the same way, as copies.

What must be checked inside the candidate's own process is checked here, on every call: poisoned memory around
it, threads it leaves, the output's structure, the launch monitor, and after each case its global hooks and
precision settings. These checks are the candidate's to defeat; the verdict's own checks (values, inputs
unchanged, timing against the judge's clock) are the judge's. Requests and replies are tuples over a pipe:
("ok", payload), ("fail", status, reason), or ("stage", name) while an extension builds.
"""

from __future__ import annotations

import os
import resource
import sys
import time
import traceback
from multiprocessing.connection import Connection
from typing import Any

import torch

from kernelevolve.eval.worker import integrity, precision, shared, trees
from kernelevolve.eval.worker.candidate import CandidateLoadError, load_candidate
from kernelevolve.eval.worker.checking import CandidateFailure, classify
from kernelevolve.eval.worker.launches import LaunchMonitor
from kernelevolve.eval.worker.outputs import aliased, not_plain, spans
from kernelevolve.eval.worker.poison import Poisoned
from kernelevolve.eval.worker.prepare import describe, sync
from kernelevolve.eval.worker.threads import ThreadWatch
from kernelevolve.platforms import extension_cache
from kernelevolve.problem.inputs import build_model
from kernelevolve.problem.problem import bind_case, case_defaults, exec_problem, shape_cases
from kernelevolve.result import Status

LOAD_ERROR = "load_error"


class CandidateProcess:
    """The state of the candidate's side: its module, a model per case, the input sets it was shown."""

    def __init__(self, conn: Connection, builds: extension_cache.Channel | None) -> None:
        self.conn, self.builds = conn, builds
        self.device = torch.device("cpu")
        self.models: dict[int, Any] = {}
        self.sets: dict[int, Any] = {}
        self.last: dict[int, Any] = {}
        self.folder = ""
        self.path = ""
        self.cand: Any = None
        self.watch: ThreadWatch | None = None
        self.before: tuple[Any, Any] | None = None
        self.problem: Any = None
        self.taken: list[Any] = []
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
            except CandidateLoadError as e:
                traceback.print_exc()
                reply = (LOAD_ERROR, str(e))
            except BaseException as e:  # noqa: BLE001 - SystemExit and KeyboardInterrupt from a candidate too
                traceback.print_exc()
                reply = ("fail", classify(e).value, f"{kind} raised {describe(e)}")
            self.conn.send(reply)

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
        self.watch = ThreadWatch()
        self.before = (integrity.fingerprint(integrity.harness_modules()), precision.state())
        self.cand = load_candidate(path)
        return self.watch.check()

    def do_model(self, key: int, init: list[Any], seed: int, dtype: torch.dtype, state: Any) -> None:
        reference = shared.open_spec(state) if state is not None else None
        try:
            self.models[key] = build_model(
                self.cand.ModelNew, init, seed, dtype, self.device, reference_state=reference
            )
        except Exception as e:  # noqa: BLE001
            raise CandidateFailure(classify(e), f"constructing ModelNew failed: {describe(e)}") from e

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

    def do_inputs(self, key: int, spec: Any) -> None:
        self.sets[key] = shared.open_spec(spec)

    def do_forget(self, keys: list[int]) -> None:
        for k in keys:
            self.sets.pop(k, None)
            self.last.pop(k, None)

    def do_call(self, model: int, key: int, poison: list[int], monitor: bool, may_alias: bool) -> tuple:
        """One checked call: (the output's spec, seconds, the candidate kernels the monitor saw or None, what the
        output shares with the inputs or '')."""
        inputs = self.sets[key]
        out, seconds, seen = checked_call(
            self.models[model], inputs, self.device, poison, self.path if monitor else "", self.watch
        )
        alias = "" if may_alias else aliased(out, spans(inputs, "input {i}"))  # the judge says it after the inputs
        return self._share(out), seconds, seen, alias

    def do_timed(self, model: Any, key: int, keep: bool) -> tuple[float, int]:
        """(milliseconds of one call on the host clock, the minor page faults it took); with keep, its output is
        kept as the set's last."""
        inputs = self.sets[key]
        fn = self.models[model]
        with torch.no_grad():
            f0 = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
            t0 = time.perf_counter()
            out = fn(*inputs)
            ms = (time.perf_counter() - t0) * 1e3
            faults = resource.getrusage(resource.RUSAGE_SELF).ru_minflt - f0
        if keep:
            self.last[key] = out
        left = self.watch.python_left()
        if left:
            raise CandidateFailure(Status.REJECTED, f"threads check: after a timed call, {left}")
        return ms, faults

    def do_clocked(self, model: int, key: int, keep: bool) -> int:
        """One call (the judge's clock times the request); with keep, its output is kept for do_take under the
        index returned."""
        fn, inputs = self.models[model], self.sets[key]
        with torch.no_grad():
            out = fn(*inputs)
        if not keep:
            return -1
        self.taken.append(out)
        return len(self.taken) - 1

    def do_take(self, index: int) -> Any:
        """A kept output, shared; every kept output goes."""
        out, self.taken = self.taken[index], []
        self._plain(out, "after a call")
        return self._share(out)

    def do_ping(self) -> None:
        """An empty request: the judge's clock around it is the cost of a request itself."""

    def do_last(self, keys: list[int]) -> dict[int, Any]:
        """The kept last output of each set (the timing-outputs check)."""
        out = {}
        for k in keys:
            if k in self.last:
                self._plain(self.last[k], "after a timed call")
                out[k] = self._share(self.last[k])
        return out

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
        if any(t.device.type != "cpu" for t in leaves):
            raise CandidateFailure(Status.REJECTED, "structure check: an output is not on the host (cpu target)")
        return shared.share(out, self.folder)[1]

    def _report_build(self, name: str | None) -> None:
        self.conn.send(("stage", name))


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
            raise CandidateFailure(classify(e), f"forward raised {describe(e)}") from e
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


def start(builds: extension_cache.Channel | None, close: list[int]) -> tuple[int, Connection]:
    """Forks the candidate's process (before any job exists in this one): (its pid, the judge's end of the pipe).
    close: descriptors the child must not keep (the result channel)."""
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
            CandidateProcess(candidate_end, builds).serve()
        finally:
            os._exit(0)
    candidate_end.close()
    return pid, judge_end
