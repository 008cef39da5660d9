"""Where the candidate's code runs, as the judge sees it: one interface, two hosts.

`Remote`: the candidate lives in a process of its own (eval/worker/runner.py), forked before the job arrived, and
the judge reaches it only through requests; inputs and outputs cross as shared memory, every output a copy. On
the cpu target its timed calls are the candidate process's host clock, cross-checked against the judge's own
clock around each request. On a GPU inputs cross as CUDA IPC handles to a memory pool of the judge's that holds
nothing else, and that process runs the timer itself (each call's device time is seen only by events in the
process that launched it): the judge checks the reference's time there against its own and bounds the
candidate's with its clock over a block of calls (eval/worker/proof.py). `InProcess` (GPU targets where the
split is off, or where the memory plan keeps input sets on the host): the candidate shares the judge's process.
"""

from __future__ import annotations

import math
import os
import signal
import statistics
import time
from collections.abc import Callable
from multiprocessing.connection import Connection
from typing import Any

import torch

from kernelevolve.eval.worker import finished, l2, launches, replies, shared, trees
from kernelevolve.eval.worker.checking import CandidateFailure, failure_of
from kernelevolve.eval.worker.prepare import PreparedCase, describe
from kernelevolve.eval.worker.runner import LOAD_ERROR, checked_call
from kernelevolve.eval.worker.series import Series
from kernelevolve.eval.worker.threads import ThreadWatch
from kernelevolve.eval.worker.timing import TimingStats
from kernelevolve.platforms import for_device
from kernelevolve.problem.candidate import CandidateLoadError, load_candidate
from kernelevolve.problem.inputs import build_model
from kernelevolve.result import Status

# The judge's clock around a timed request (the fastest), less the cost of a request itself (measured before the
# candidate loaded: `Remote.calibrate`), may exceed what the candidate's process reports (the median) by this factor
# plus the slack before the reported times are called forged; a report may exceed the judge's median by the slack.
CROSS_CHECK_FACTOR = 1.5
CROSS_CHECK_SLACK_MS = 0.05
# ... or, where more, this many times the spread of a request's own cost on this host (the 90th percentile less the
# fastest of the empty requests before the candidate loaded), at most CROSS_CHECK_SLACK_MAX_MS: on a VM whose
# request costs 0.05-0.1 ms an honest 0.03 ms OpenMP call saw every bracket of two passes 0.11 ms over its report
# (benchmarks/honest_verdicts.py). A wider slack gains a forger nothing: its time is never taken below the judge's
# fastest bracket less a request, over CROSS_CHECK_FACTOR (RemoteFn.floor_ms); the slack decides only whether a
# gap is called forged.
CROSS_CHECK_JITTERS = 2.0
CROSS_CHECK_SLACK_MAX_MS = 0.25
CALIBRATION_REQUESTS = 20


def _asked(group: Any, names: set[str]) -> None:
    """Figures from the candidate's process name only the functions it was asked to time; raises CandidateFailure
    (a forged name would stand for a baseline the judge never timed, or for no field of the result at all)."""
    if not isinstance(group, dict) or not set(group) <= names:
        raise CandidateFailure(
            Status.REJECTED, "integrity check: the candidate's process sent times of functions it was not asked to time"
        )


def _figures(*groups: dict[str, Any]) -> None:
    """Timing figures from the candidate's process are TimingStats of numbers or None; raises CandidateFailure."""
    for group in groups:
        for st in dict(group).values():
            if st is None:
                continue
            fields = (
                (st.median_ms, st.iqr_ms, st.n, st.launch_ms, st.tail_ms, st.faults_per_call)
                if isinstance(st, TimingStats)
                else ("not a figure",)
            )
            if not all(v is None or (isinstance(v, (int, float)) and v == v and v >= 0) for v in fields):
                raise CandidateFailure(
                    Status.REJECTED, "integrity check: the candidate's process sent timing figures that are no numbers"
                )


class InProcess:
    """The candidate in the judge's own process."""

    in_process = True
    measures = False  # the judge's timer times it

    def __init__(self, device: torch.device, candidate_path: str) -> None:
        self.device, self.path = device, candidate_path
        self.watch: ThreadWatch | None = None
        self.cand: Any = None

    def load(self, allow_tf32: bool, before_load: Callable[[], None], compiled: bool = False) -> str:
        before_load()
        self.watch = ThreadWatch()
        self.cand = load_candidate(self.path)
        return self.watch.check()

    def adopt(self, tree: Any) -> Any:
        return tree

    def adopt_many(self, trees_: list[Any]) -> list[Any]:
        return trees_

    def pids(self) -> list[int]:
        return []

    def forget(self, tree: Any) -> None:
        pass

    def forget_many(self, trees_: list[Any]) -> None:
        pass

    def model(self, key: int, pc: PreparedCase, dtype: torch.dtype) -> Any:
        try:
            return build_model(self.cand.ModelNew, pc.init, pc.param_seed, dtype, self.device, reference=pc.ref_model)
        except Exception as e:  # noqa: BLE001
            raise failure_of(e, "constructing ModelNew failed:") from e

    def call(
        self, model: Any, inputs: Any, pc: PreparedCase, monitor: bool
    ) -> tuple[Any, float, list[str] | None, str]:
        """(output, seconds, the kernels the launch monitor saw, what the output shares with the inputs where the
        judge cannot see it: '' here, where check_output sees the output itself)."""
        out, seconds, seen = checked_call(
            model, inputs, self.device, pc.out_sizes, self.path if monitor else "", self.watch
        )
        return out, seconds, seen, ""

    def threads(self, native_only: bool = False) -> str:
        return self.watch.native_busy() if native_only else self.watch.check()

    def python_left(self) -> str:
        return self.watch.python_left()

    def output(self, out: Any) -> Any:
        return out

    def l2_persisting(self) -> int:
        return l2.persisting_bytes()

    def device_kernels(self, model: Any, inputs: Any) -> list[str] | None:
        """The device kernels one call runs (the kernel-launch check)."""

        def call() -> None:
            with torch.no_grad():
                model(*inputs)

        return launches.device_kernels(call, self.device)

    def profile(self, mode: str, model: Any, inputs: Any, options: dict[str, Any]) -> Any:
        """Profiling for the memory agent over one call (best effort; never part of the verdict)."""
        from kernelevolve.eval.worker import profiling

        with torch.no_grad():
            return profiling.collect(mode, self.cand, lambda: model(*inputs), self.device, **options)

    def tampered(self) -> list[str]:
        return []  # the judge's own fingerprints cover this process

    def close(self, reap: bool = True) -> None:
        pass


class RemoteFn:
    """The candidate's model as the timer calls it: each call a request, timed by the candidate's process on its
    host clock and bracketed by the judge's. The request is the one every call of that model comes through
    (`Remote.run`), so that process cannot tell a timed call from a checked one (issue 45, class 3)."""

    def __init__(self, host: Remote, model: Any) -> None:
        self.host, self.model = host, model
        self.brackets: list[float] = []
        self.claimed: list[float] = []
        self.empty: list[float] = []

    def remote_ms(self, inputs: Any) -> tuple[float, int]:
        """(ms of one call as the candidate's process timed it, the page faults it counted there)."""
        key = self.host.key(inputs)
        t0 = time.perf_counter()
        ms, faults, _ = self.host.run(self.model, key, timed=True)
        self.brackets.append((time.perf_counter() - t0) * 1e3)
        self.host.read_output()  # before the next request: the output must be there already
        self.claimed.append(ms)
        self.empty.append(self.host.ping())
        return ms, faults

    def __call__(self, inputs: Any) -> None:
        self.host.run(self.model, self.host.key(inputs))

    def cross_check(self, name: str) -> str:
        """'' when the candidate process's times of `name` agree with the judge's clock, else why not. The judge's
        figure is its fastest bracket less the cost of a request (`request_ms`): a call whose reply waited for a
        core only lengthens that call's bracket, while a report shrunk on every call shows in the fastest one too."""
        if len(self.claimed) < 3:
            return ""
        claimed = statistics.median(self.claimed)
        seen = min(self.brackets) - self.request_ms()
        # A baseline's report (eager, torch.compile) is held to the upper bound alone: one under-reported can only
        # lower the candidate's speedup (its baseline is the lower of the reference's times in the two processes),
        # while on calls of microseconds the judge's clock around a request cannot bound it from below on a busy
        # host. The candidate's own report is held to both: there the gap is what a forged clock shows.
        below_median = claimed - CROSS_CHECK_SLACK_MS <= statistics.median(self.brackets)
        slack = self.slack_ms()
        if below_median and (name != "candidate" or seen <= CROSS_CHECK_FACTOR * claimed + slack):
            return ""
        return (
            f"timing cross-check: the candidate's process reported {claimed:.4g} ms per call of {name} (median), "
            f"the judge's clock around the same calls saw at least {seen:.4g} ms (allowed: at most "
            f"{CROSS_CHECK_FACTOR}x the report plus {slack:.3g} ms, and the report no more than the judge's median "
            f"plus {CROSS_CHECK_SLACK_MS} ms)"
        )

    def slack_ms(self) -> float:
        """The cross-check's slack: CROSS_CHECK_SLACK_MS, or the host's measured spread of a request's cost times
        CROSS_CHECK_JITTERS where more, at most CROSS_CHECK_SLACK_MAX_MS (both measured before the candidate
        loaded)."""
        return min(max(CROSS_CHECK_SLACK_MS, CROSS_CHECK_JITTERS * self.host.jitter_ms), CROSS_CHECK_SLACK_MAX_MS)

    def median_ms(self) -> float:
        return statistics.median(self.claimed)

    def floor_ms(self) -> float | None:
        """The least per-call time the judge's clock allows a report of (the cross-check's bound without its
        slack): its fastest bracket less the request's own cost, over CROSS_CHECK_FACTOR; None before 3 calls."""
        if len(self.brackets) < 3:
            return None
        return max(min(self.brackets) - self.request_ms(), 0.0) / CROSS_CHECK_FACTOR

    def request_ms(self) -> float:
        """The cost of a request itself: the fastest empty request, those beside the timed calls (served by the
        candidate's process, which can make them slower, never faster) and those before it loaded
        (`Remote.calibrate`), so a slowed empty request can only lengthen the judge's figure (issue 45, class 2)."""
        return min([self.host.empty_ms, *self.empty])


class Remote:
    """The judge's end of the candidate's process."""

    in_process = False
    measures = False  # cpu: the judge's timer, each call a request; on a GPU that process runs the timer

    def __init__(
        self,
        pid: int,
        conn: Connection,
        candidate_path: str,
        problem_path: str,
        report_build: Callable[[str | None], None],
        device: torch.device | None = None,
    ):
        self.pid, self.conn, self.path, self.problem_path = pid, conn, candidate_path, problem_path
        self.report_build = report_build
        self.device = device or torch.device("cpu")
        self.measures = for_device(self.device).separate_device()
        # GPU: what the candidate may see is copied into this pool; an IPC handle opens a whole segment, and the
        # pool's segments hold nothing of the judge's own (references, held-back inputs).
        self.pool = for_device(self.device).memory_pool()
        self.folder = shared.folder()
        self.keys: dict[
            int, int
        ] = {}  # id of a shared input tree the judge holds -> its key in the candidate's process
        self.held: dict[int, Any] = {}  # the trees themselves, so an id is never reused while its key stands
        self._next = 0
        self.block_overhead: Any = None  # proof.Overhead, measured before the candidate loads (GPU)
        self._timed: set[str] = set()  # GPU: the functions the last timing pass was asked to time
        self._unanswered = 0  # requests sent without waiting for their replies (`warm_up`)
        self.warm_up_s: dict[str, float] = {}  # GPU: the seconds of each part of the process's warm-up
        # cpu: the cost of a request itself, measured before the candidate loads (`calibrate`); 0 (no correction)
        # until then
        self.empty_ms = 0.0
        self.jitter_ms = 0.0  # the spread of a request's own cost, measured with empty_ms (`calibrate`)
        # cpu: the judge's reads of each call's output right after its reply (eval/worker/finished.py); probed in
        # `calibrate`, off until then and where this host does not let the judge read that process
        self.reader = finished.Reader(pid)
        self._placed: tuple[int, Any] | None = None  # a timed call's (key, output place), till `read_output`

    def warm_up(self) -> None:
        """Ask the candidate's process to make its CUDA context now, without waiting: it does while the judge makes
        its own and prepares the inputs. Its reply is read before the next request's."""
        try:
            self.conn.send(("warm_up",))
            self._unanswered += 1
        except (OSError, BrokenPipeError):
            pass  # a process already gone: the next request says so

    def request(self, kind: str, *args: Any) -> Any:
        try:
            while self._unanswered:
                self._unanswered -= 1
                self._warmed(self._reply())
            self.conn.send((kind, *args))
            while True:
                reply = self._reply()
                if reply[0] != "stage":
                    break
                self.report_build(reply[1])
        except (EOFError, OSError, BrokenPipeError):
            raise CandidateFailure(Status.CRASHED, self._death()) from None
        if reply[0] == "ok":
            return reply[1]
        if reply[0] == LOAD_ERROR:
            raise CandidateLoadError(reply[1])
        return self._failure(reply)

    def _warmed(self, reply: tuple) -> None:
        """The warm-up's reply: its parts' seconds, measured before any candidate code ran there (stages only)."""
        parts = reply[1] if len(reply) > 1 and reply[0] == "ok" else None
        if isinstance(parts, dict):
            self.warm_up_s = {str(k): float(v) for k, v in parts.items() if isinstance(v, (int, float))}

    @staticmethod
    def _failure(reply: tuple) -> Any:
        """A failure the candidate's process reports ends the evaluation with its status, except `inconclusive`,
        which only the judge's own measurements of the host give (eval/worker/contention.py)."""
        try:
            status = Status(reply[1])
        except (ValueError, IndexError):
            status = Status.INCONCLUSIVE
        if status is Status.INCONCLUSIVE:
            raise CandidateFailure(
                Status.REJECTED, "integrity check: the candidate's process sent a status only the judge may give"
            )
        raise CandidateFailure(status, str(reply[2]) if len(reply) > 2 else "")

    def _reply(self) -> tuple:
        """The next reply, built by the judge's own unpickler (eval/worker/replies.py); anything else ends the
        evaluation as the candidate's doing."""
        data = self.conn.recv_bytes()
        try:
            reply = replies.loads(data)
        except Exception as e:  # noqa: BLE001 - Refused, or bytes that are no pickle at all
            raise CandidateFailure(
                Status.REJECTED,
                f"integrity check: the candidate's process sent a reply the judge does not accept ({describe(e, 120)})",
            ) from None
        if not isinstance(reply, tuple) or not reply or not isinstance(reply[0], str):
            raise CandidateFailure(
                Status.REJECTED, "integrity check: the candidate's process sent a reply the judge does not accept"
            )
        return reply

    def _death(self) -> str:
        try:
            _, status = os.waitpid(self.pid, 0)
        except ChildProcessError:
            return "the candidate's process died"
        if os.WIFSIGNALED(status):
            sig = os.WTERMSIG(status)
            return f"the candidate's process was killed by {signal.Signals(sig).name}"
        return f"the candidate's process exited with status {os.WEXITSTATUS(status)}"

    def load(self, allow_tf32: bool, before_load: Callable[[], None], compiled: bool = False) -> str:
        return self.request("load", self.path, allow_tf32, self.folder, self.problem_path, compiled)

    def pids(self) -> list[int]:
        return [self.pid]

    def adopt(self, tree: Any) -> Any:
        """The tree in shared memory, known to the candidate's process; the judge uses the returned tree."""
        return self.adopt_many([tree])[0]

    def adopt_many(self, trees_: list[Any]) -> list[Any]:
        """adopt for each tree, in one request."""
        made = [shared.share(tree, self.folder, self.pool) for tree in trees_]
        keys = list(range(self._next, self._next + len(made)))
        self._next += len(made)
        try:
            self.request("inputs", [(key, spec) for key, (_, spec) in zip(keys, made)])
        finally:
            for _, spec in made:  # both processes hold the mappings now: a killed worker leaves no file behind
                shared.release(spec)
        for key, (mine, spec) in zip(keys, made):
            self.keys[id(mine)] = key
            self.held[key] = (mine, spec)
        return [mine for mine, _ in made]

    def forget(self, tree: Any) -> None:
        """A tree adopted for one check: its files and the candidate process's mapping go."""
        self.forget_many([tree])

    def forget_many(self, trees_: list[Any]) -> None:
        keys = [key for key in (self.keys.pop(id(tree), None) for tree in trees_) if key is not None]
        for key in keys:
            shared.release(self.held.pop(key)[1])
        self.reader.forget(keys)
        if keys:
            self.request("forget", keys)

    def key(self, inputs: Any) -> int:
        try:
            return self.keys[id(inputs)]
        except KeyError:
            raise RuntimeError("harness error: an input set the candidate's process was never given") from None

    def _state(self, pc: PreparedCase) -> Any:
        if not isinstance(pc.ref_model, torch.nn.Module):
            return None
        return shared.share(dict(pc.ref_model.state_dict()), self.folder, self.pool)[1]

    def model(self, key: int, pc: PreparedCase, dtype: torch.dtype) -> int:
        state = self._state(pc)
        try:
            self.request("model", key, pc.init, pc.param_seed, dtype, state)
        finally:
            shared.release(state)
        return key

    def baselines(self, key: int, pc: PreparedCase, dtype: torch.dtype) -> dict[str, RemoteFn]:
        """The reference (and its torch.compile, where the case has one) in the candidate's process, as the
        timer calls them there: eager and candidate are timed by one process, as before the split."""
        compiled = pc.compiled is not None
        state = self._state(pc)
        try:
            self.request("reference", ("ref", key), pc.case, pc.init, pc.param_seed, dtype, state, compiled)
        finally:
            shared.release(state)
        fns = {"eager": RemoteFn(self, ("ref", key))}
        if compiled:
            fns["compile"] = RemoteFn(self, ("compile", ("ref", key)))
        return fns

    def run(self, model: Any, key: int, timed: bool = False) -> tuple[float, int, list[str] | None]:
        """One call of `model` on the set under `key`: the one request every call comes through, timed, checked or
        on unseen inputs alike (runner.CandidateProcess.do_run): (ms by that process's clock, its page faults, the
        kernels the launch monitor saw or None). A candidate's output is read where the reply says it lies before
        the next request (eval/worker/finished.py): here, or with `timed` by `read_output` once the caller's clock
        around this request has stopped."""
        found = self.request("run", model, key)
        if not (
            isinstance(found, tuple)
            and len(found) == 4
            and all(isinstance(v, (int, float)) and v == v and v >= 0 for v in found[:2])
        ):
            raise CandidateFailure(Status.REJECTED, "integrity check: the candidate's process sent no call's figures")
        if not isinstance(model, tuple) and not self.measures:
            self._placed = (key, found[3])
            if not timed:
                self.read_output()
        return found[:3]

    def read_output(self) -> None:
        """The judge's read of the last candidate call's output, right after its reply (eval/worker/finished.py);
        raises CandidateFailure where the reply's place for it cannot be read."""
        if self._placed is None:
            return
        (key, place), self._placed = self._placed, None
        why = self.reader.after_reply(key, place)
        if why:
            raise CandidateFailure(Status.REJECTED, f"finished-output check: the candidate's process {why}")

    def take(self, keys: list[int], may_alias: bool) -> dict[int, tuple[Any, str]]:
        """The last outputs of the sets under `keys`, copied here: (the output, or None where it shares memory
        with its inputs; what it shares)."""
        found = self.request("take", keys, may_alias)
        try:
            if not isinstance(found, dict) or not set(found) <= set(keys):
                raise TypeError
            taken = {k: (None if spec is None else self._copy(spec), str(alias)) for k, (spec, alias) in found.items()}
        except (TypeError, ValueError):
            raise CandidateFailure(
                Status.REJECTED,
                "integrity check: the candidate's process sent outputs the judge did not ask for or cannot read",
            ) from None
        for k, (out, _) in taken.items():
            why = self.reader.check(k, out) if out is not None else ""
            if why:
                raise CandidateFailure(
                    Status.REJECTED, f"finished-output check: {why} (its work went on after the reply)"
                )
        return taken

    def call(
        self, model: int, inputs: Any, pc: PreparedCase, monitor: bool
    ) -> tuple[Any, float, list[str] | None, str]:
        """A correctness trial's call: the trials' conditions set (poisoned memory, the launch monitor), then the
        call every call is, then its output taken."""
        key = self.key(inputs)
        self.request("checking", pc.out_sizes, monitor)
        ms, _, seen = self.run(model, key)
        self.request("checking", [], False)
        found = self.take([key], pc.ref_aliases_input)
        if key not in found:
            raise CandidateFailure(Status.REJECTED, "integrity check: the candidate's process kept no output of a call")
        out, alias = found[key]
        return out, ms / 1e3, seen, alias

    def timed_fn(self, model: int) -> RemoteFn:
        return RemoteFn(self, model)

    def clocked(self, model: int, inputs: Any, keep: bool) -> tuple[float, int]:
        """One call: (ms on the judge's clock around the request, less the cost of a request: the fastest of two
        empty ones just before it and those before the candidate loaded (`calibrate`), so an empty request the
        candidate serves slowly can only lengthen the figure; with keep the key its output is kept under in the
        candidate's process until `output` takes it, else -1)."""
        empty = min(self.empty_ms, self.ping(), self.ping())
        key = self.key(inputs)
        t0 = time.perf_counter()
        self.run(model, key, timed=True)
        ms = max((time.perf_counter() - t0) * 1e3 - empty, 0.0)
        self.read_output()
        return ms, (key if keep else -1)

    def calibrate(self, n: int = CALIBRATION_REQUESTS) -> None:
        """cpu: the cost of a request itself, the fastest of `n` empty ones, taken while the candidate's process
        runs only the harness's code (before `load`): the correction the judge subtracts from its clock around a
        request, which a candidate could otherwise lengthen by serving its empty requests slowly (issue 45, class
        2). On a host that gets busier later the correction stays small, which can only lengthen the judge's
        figures, never shorten them."""
        times = sorted([self.ping() for _ in range(n)][n // 4 :])  # the first few warm the pipe and the process up
        self.empty_ms = times[0]
        self.reader.probe()
        self.jitter_ms = times[int(0.9 * (len(times) - 1))] - times[0]

    def output(self, key: int) -> Any:
        """A clocked call's output, copied."""
        out, _ = self.take([key], True).get(key, (None, ""))
        return out

    def last_outputs(self, sets: list[Any]) -> dict[int, Any]:
        """The last output of each timing set (by its index in sets), copied."""
        keys = [self.key(s) for s in sets]
        found = self.take(keys, True)
        return {i: found[k][0] for i, k in enumerate(keys) if k in found}

    def measure(self, model: int, pc: PreparedCase, copy_floor: bool, config: Any) -> Series:
        """GPU: the case's timing pass, run by the candidate's process (eval/worker/series.py) with the reference
        `baselines` built there from the judge's parameters; the last outputs copied here."""
        keys = [self.key(s) for s in pc.timing_sets]
        series = self.request(
            "series", model, ("ref", model), keys, pc.compiled is not None, pc.min_bytes if copy_floor else 0, config
        )
        if not isinstance(series, Series) or not {"eager", "candidate"} <= set(series.stats):
            raise CandidateFailure(Status.REJECTED, "integrity check: the candidate's process sent no timing pass")
        self._timed = {"eager", "candidate"} | ({"compile"} if pc.compiled is not None else set())
        _asked(series.stats, self._timed | ({"copy"} if copy_floor else set()))
        _asked(series.host, self._timed)
        _asked(series.graphs, self._timed)
        _figures(series.stats, series.host, series.graphs)
        series.last = {int(k): self._copy(v) for k, v in dict(series.last).items()}
        return series

    def retime_host(self) -> dict[str, Any]:
        found = self.request("retime_host")
        _asked(found, self._timed)
        _figures(found)
        return found

    def block(self, model: int, sets: list[Any], slots: list[Any] | None = None) -> tuple[str, list[Any]]:
        """The judge's proof block (eval/worker/proof.py) made ready over `sets` (adopted): ('graph' or 'plain',
        the memory each call's output is written to, mapped here by IPC handle: the judge reads the outputs there
        before its clock stops, with no request between). slots: the judge's own memory for the outputs (adopted),
        which calls launched one by one then write."""
        if slots is not None:
            self.request("block", model, [self.key(s) for s in sets], [self.key(s) for s in slots])
            return "plain", slots
        found = self.request("block", model, [self.key(s) for s in sets])
        if not (isinstance(found, tuple) and len(found) == 2 and isinstance(found[1], list)):
            raise CandidateFailure(Status.REJECTED, "integrity check: the candidate's process sent no block to time")
        mode, slots = found
        leaves = [t for slot in slots for t in trees.tensors(slot)]
        if any(t.device != self.device for t in leaves):
            raise CandidateFailure(
                Status.REJECTED, "structure check: an output of the judge's block of calls is not on the device"
            )
        return ("graph" if mode == "graph" else "plain"), slots

    def block_run(self, read: Callable[[], Any]) -> tuple[float, Any, float | None]:
        """(ms on the judge's clock around one run of the block, which ends with a synchronize there, and `read`,
        the judge's own read of the outputs, with a synchronize here; what `read` returned; the ms that process
        says its events saw around the run, for the log only)."""
        return self._bracket("block_run", read)

    def tick(self, read: Callable[[], Any]) -> tuple[float, Any, float | None]:
        """block_run's bracket around a request that runs one tiny kernel: what the bracket costs by itself."""
        return self._bracket("tick", read)

    def _bracket(self, kind: str, read: Callable[[], Any]) -> tuple[float, Any, float | None]:
        t0 = time.perf_counter()
        said = self.request(kind)
        found = read()
        for_device(self.device).synchronize(self.device)
        wall = (time.perf_counter() - t0) * 1e3
        return wall, found, (float(said) if isinstance(said, float) and math.isfinite(said) else None)

    def block_end(self) -> None:
        self.request("block_end")

    def ping(self) -> float:
        """ms on the judge's clock around an empty request (with its synchronize)."""
        t0 = time.perf_counter()
        self.request("ping")
        return (time.perf_counter() - t0) * 1e3

    def l2_persisting(self) -> int:
        found = self.request("l2_persisting")
        return found if isinstance(found, int) else 1

    def device_kernels(self, model: int, inputs: Any) -> list[str] | None:
        found = self.request("device_kernels", model, self.key(inputs))
        return None if found is None else [str(k) for k in found]

    def profile(self, mode: str, model: int, inputs: Any, options: dict[str, Any]) -> Any:
        return self.request("profile", mode, model, self.key(inputs), options)

    def threads(self, native_only: bool = False) -> str:
        return self.request("threads", native_only)

    def python_left(self) -> str:
        return ""  # checked in the candidate's process after every call

    def tampered(self) -> list[str]:
        return self.request("tampered")

    def _copy(self, spec: Any) -> Any:
        """The judge's own copy of an output the candidate's process shared (its files removed). Only files in the
        job's own shared folder are opened and removed: the spec is the candidate's to write."""
        outside = shared.outside(spec, self.folder)
        if outside:
            raise CandidateFailure(
                Status.REJECTED,
                f"integrity check: the candidate's process named a file outside the shared folder ({outside[:200]})",
            )
        try:
            return trees.clone(shared.open_spec(spec))
        finally:
            shared.release(spec)

    def close(self, reap: bool = True) -> None:
        """Kill the candidate's process. reap=False (the job is over): its exit, a CUDA context's teardown among
        it, is not waited for before the result goes out: killed, it runs no more code, and the worker exits right
        after (its PID namespace's init, or an orphan's reaper, reaps it)."""
        try:
            os.kill(self.pid, signal.SIGKILL)
            if reap:
                os.waitpid(self.pid, 0)
        except (ProcessLookupError, ChildProcessError):
            pass
        import shutil

        shutil.rmtree(self.folder, ignore_errors=True)
