"""Parent side of evaluation: one fresh worker process per candidate, a hard timeout on its process group.

The parent never imports torch. Workers are started (or forked from the worker zygote, eval/launch/zygote.py)
before their job is known and used for one candidate each; two clocks run against a job, `compile_timeout_s` for
its compile stages and `timeout_s` for the rest. The guarantees: docs/harness.md ("Isolation"); the trace of one
evaluation and the decisions behind it: docs/architecture.md ("Evaluating one candidate", "One worker per
candidate").
"""

from __future__ import annotations

import json
import os
import secrets
import selectors
import signal
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

from kernelevolve.eval import acceptance, holders
from kernelevolve.eval.builds.extension_cache import is_build_stage
from kernelevolve.eval.builds.service import BuildService, Channel
from kernelevolve.eval.launch import sandbox, spawn
from kernelevolve.eval.redact import redact
from kernelevolve.eval.wire import (
    DEVICE_ENV,
    LIFELINE_ENV,
    MEMORY_LIMIT_ENV,
    RESULT_FD_ENV,
    EvalJob,
    EvalOptions,
    Event,
)
from kernelevolve.platforms import get_platform
from kernelevolve.problem.candidate import CandidateLoadError, read_source
from kernelevolve.problem.problem import Problem, ProblemError, source_hash
from kernelevolve.result import EvalResult, Status

LOG_TAIL_CHARS = 4000
RESULT_DRAIN_S = 5.0  # how long the pipe is read after a result, for the worker's exit to end it
# How long a GPU evaluation waits for the last one's processes to finish exiting (their device contexts and memory
# are released as they exit, which the kill does not wait for).
PREVIOUS_EXIT_S = 5.0
READY_TIMEOUT_S = 180.0
# How long the events pipe may stay silent and open once the worker has exited: a process it left holds the pipe.
EXITED_SILENT_S = 2.0


class WorkerExited(Exception):
    """The worker has exited, but the events pipe stays open and silent: a process it started holds it."""


def default_memory_limit() -> int:
    """Half the machine's RAM: a runaway candidate on the cpu target fails an allocation instead of
    waking the kernel's OOM killer."""
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") // 2
    except (ValueError, OSError):
        return 0


class WorkerProcess:
    """A started worker: its process group, its event pipe and its log."""

    def __init__(
        self, target: str, memory_limit: int | None = None, device_index: int = 0, build_timeout_s: float = 600.0
    ):
        platform = get_platform(target)
        self.gpu = platform.separate_device()
        self.started = time.monotonic()
        self.log = tempfile.TemporaryFile()
        read_fd, write_fd = os.pipe()
        # A launcher (`unshare`) keeps every descriptor it is given till the worker's exit, and the events pipe's
        # end, which tells this process that nothing more comes after the result, would wait for it: the worker
        # receives the pipe over a socket instead, which a launcher or the zygote keeps in its stead
        # (eval/worker/main.py).
        hand, hand_child = socket.socketpair()
        # The lifeline: the worker holds its read end and exits when it closes, i.e. when this process is gone
        # (kill -9 of optimize while a candidate hangs would otherwise leave the worker running for ever).
        life_read, self._lifeline = os.pipe()
        env = sandbox.child_env(platform.worker_env())
        env[RESULT_FD_ENV] = str(hand_child.fileno())
        env[LIFELINE_ENV] = str(life_read)
        env["PYTHONUNBUFFERED"] = "1"
        # The compile baseline compiles in the worker itself: inductor's subprocess pool would start a timer
        # thread at an unpredictable moment, which the threads check would blame on the candidate.
        env["TORCHINDUCTOR_COMPILE_THREADS"] = "1"
        # OpenMP thread pools (torch's, a C++ candidate's) sleep when their work is done instead of spinning for
        # 200 ms: a pool still spinning after an honest kernel's call takes the cores the reference is timed on
        # next (docs/harness.md, "A busy host"). Set here: OpenMP reads it once, as its library loads.
        env["OMP_WAIT_POLICY"] = "PASSIVE"
        limit = 0
        if platform.separate_device():
            env[DEVICE_ENV] = str(device_index)
        else:
            limit = default_memory_limit() if memory_limit is None else memory_limit
            env[MEMORY_LIMIT_ENV] = str(limit)
        self.memory_limit = limit
        # Its C++/CUDA extensions are built by the harness, in a step of its own (eval/builds/service.py), under its
        # limit.
        builds = Channel(BuildService(timeout_s=build_timeout_s, env=platform.worker_env(), memory_limit=limit))
        env.update(builds.child_env())
        try:
            self.proc = spawn.start_worker(  # its own process group, killed whole, in the candidate's namespaces
                env,
                memory_limit=limit,  # over its whole process tree, where a memory cgroup can be made
                stdout=self.log.fileno(),
                pass_fds=(hand_child.fileno(), life_read, *builds.child_fds()),
            )
        except BaseException:
            builds.close()
            for fd in (read_fd, write_fd, life_read, self._lifeline):
                os.close(fd)
            hand.close()
            hand_child.close()
            raise
        builds.serve(alive=lambda: self.proc.poll() is None)
        self._builds = builds
        with hand, hand_child:
            try:
                socket.send_fds(hand, [b"events"], [write_fd])
            except OSError:  # the worker is gone already: it reports nothing, and the pipe ends at once
                pass
        os.close(write_fd)
        os.close(life_read)
        self._events = os.fdopen(read_fd, "rb", buffering=0)
        self._buffer = b""
        self.last_stage = "start"
        self.results = 0  # result events read from the pipe (the parent accepts exactly one: eval/acceptance.py)
        self.exit_wait = 0.0
        self.exiting: dict[int, int] = {}  # after the kill: its processes still exiting (pid: start time)

    def next_event(self, deadline: float) -> dict | None:
        """The next event, or None at end of stream; raises TimeoutError at the deadline, and WorkerExited where
        the worker has exited and the pipe, held open by a process it left, stays silent for EXITED_SILENT_S."""
        exited_at = None
        while b"\n" not in self._buffer:
            now = time.monotonic()
            remaining = deadline - now
            if remaining <= 0:
                raise TimeoutError
            with selectors.DefaultSelector() as sel:
                sel.register(self._events, selectors.EVENT_READ)
                if not sel.select(timeout=min(remaining, 0.5)):
                    if self.proc.poll() is None:
                        continue
                    exited_at = now if exited_at is None else exited_at
                    if now - exited_at >= EXITED_SILENT_S:
                        raise WorkerExited
                    continue
            chunk = self._events.read(65536)
            if not chunk:
                return None
            self._buffer += chunk
        line, self._buffer = self._buffer.split(b"\n", 1)
        try:
            event = json.loads(line)
        except (ValueError, RecursionError):
            event = None
        if not isinstance(event, dict) or not isinstance(event.get("event", ""), str):  # not the harness's
            return {"event": "garbage", "line": line[:200].decode(errors="replace")}
        if event.get("event") == Event.STAGE:
            self.last_stage = str(event.get("stage", self.last_stage))
        return event

    def send_job(self, job: EvalJob) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(job.model_dump_json().encode() + b"\n")
        self.proc.stdin.flush()

    def end_trusted_phase(self) -> None:
        """The worker waits at the end of its trusted phase: keep what it wrote into the shared caches, then let it
        load the candidate (stdin then closes: nothing more is sent)."""
        private_tmp = getattr(self.proc, "private_tmp", None)
        if private_tmp:
            try:
                sandbox.share_trusted_writes(private_tmp)
            except OSError as e:  # a full disk: the caches only stay colder
                print(f"[kernelevolve] the shared caches kept nothing of this evaluation: {e}", file=sys.stderr)
        self._close_stdin(b"go\n")

    def _close_stdin(self, last: bytes = b"") -> None:
        stdin = self.proc.stdin
        if stdin is None or stdin.closed:
            return
        try:
            if last:
                stdin.write(last)
            stdin.close()
        except OSError:  # the worker is gone
            pass

    def kill(self, keep_events: bool = False) -> int:
        """Kill the whole process group (the candidate's children too); returns the worker's exit status, and
        keeps in `exiting` its processes that had not yet exited. keep_events: the events pipe stays open, for
        `results_left`."""
        # Read before the kill, while its pid is still its own (not yet reaped); a second kill adds nothing.
        tree = spawn.process_tree(self.proc.pid) if self.gpu and self.proc.returncode is None else {}
        code = spawn.kill_group(self.proc)
        self.exiting = spawn.exiting({**self.exiting, **tree})
        self._builds.join()  # a build it asked for is stopped and its staging folder removed before this returns
        self._close_stdin()
        if not keep_events:
            self._events.close()
        if self._lifeline >= 0:
            os.close(self._lifeline)
            self._lifeline = -1
        return code

    def count_results(self, deadline: float) -> None:
        """Read the events pipe to its end (or the deadline), counting the results in it."""
        if self._events.closed:
            return
        try:
            while (event := self.next_event(deadline)) is not None:
                self.results += event.get("event") == Event.RESULT
        except (TimeoutError, WorkerExited, OSError, ValueError):
            pass

    def close_events(self) -> None:
        """After the kill: count what is still in the pipe (its writers are dead, so it ends at once, unless a
        process outside the sandbox holds it), then close it."""
        self.count_results(time.monotonic() + 0.5)
        self._events.close()

    def log_tail(self, limit: int = LOG_TAIL_CHARS) -> str:
        try:
            self.log.seek(0, os.SEEK_END)
            size = self.log.tell()
            self.log.seek(max(0, size - limit))
            return self.log.read().decode(errors="replace")
        except (OSError, ValueError):
            return ""


def _hash_of(path: Path) -> str:
    """The hash the worker records for a file: its text, or "" where it is not UTF-8 Python (read_source)."""
    try:
        text = read_source(path)
    except (CandidateLoadError, OSError):
        text = ""
    try:
        return source_hash(text)
    except (RecursionError, MemoryError, ValueError):  # a file built to break the parser: the worker failed too
        return ""


def compiling(stage: str) -> bool:
    """Stages on the compile clock: the candidate's extension builds and the torch.compile baseline (prepare.py)."""
    return is_build_stage(stage) or stage.startswith("compile baseline")


def _signal_name(code: int) -> str:
    try:
        return signal.Signals(-code).name
    except ValueError:
        return f"signal {-code}"


class Evaluator:
    """Evaluates candidates for one target, one isolated worker per candidate."""

    def __init__(
        self,
        target: str,
        *,
        timeout_s: float = 300.0,
        device_index: int = 0,
        prestart: bool | int = False,
        memory_limit: int | None = None,
        compile_timeout_s: float = 600.0,
    ):
        """prestart: spare workers kept started (True: one on the CPU, four on a GPU, where a worker's start, its
        imports, takes longer than a typical evaluation, so back-to-back evaluations would wait for fewer spares; a
        spare makes no CUDA context before its job; docs/benchmarks/search.md measures two against four).
        timeout_s: the candidate's wall-clock limit, compiles excluded; compile_timeout_s: the limit on its compiles
        (extension builds, the torch.compile baseline), all together."""
        self.platform = get_platform(target)
        self.target = target
        self.timeout_s = timeout_s
        self.compile_timeout_s = compile_timeout_s
        self.device_index = device_index
        self.platform.candidate_in_judge()  # a mistyped judge-split mode is said here, not by every worker
        self.spares = self.platform.spare_workers() if prestart is True else int(prestart)
        self.memory_limit = memory_limit
        self._spares: list[WorkerProcess] = []
        self._busy: set[WorkerProcess] = set()  # workers evaluating now: close() kills them too
        # GPU: the last evaluation's processes still exiting, which the next one waits for (`_previous_exit`).
        self._exiting: dict[int, int] = {}
        self._last_exiting: dict[int, int] = {}  # those of them the wait gave up on, still exiting
        self._closed = False
        self._top_up()

    def _worker(self) -> WorkerProcess:
        while self._spares:
            worker = self._spares.pop(0)  # the oldest: the most likely to be ready
            if worker.proc.poll() is None:
                return worker
            worker.kill()
        return self._new_worker()

    def _new_worker(self) -> WorkerProcess:
        return WorkerProcess(self.target, self.memory_limit, self.device_index, self.compile_timeout_s)

    def _top_up(self) -> None:
        while not self._closed and len(self._spares) < self.spares:
            self._spares.append(self._new_worker())

    def evaluate(
        self,
        problem: Problem,
        candidate: str | Path,
        options: EvalOptions | None = None,
        /,
        *,
        seed: int | None = None,
        **fields: object,
    ) -> EvalResult:
        """Raises ProblemError for a malformed problem; every candidate failure is a result.

        options: how to evaluate (eval/wire.py); keyword `fields` override single options (`trials=1`), so a
        caller states only what differs from the defaults. seed: the job's seed (default: drawn per call)."""
        candidate_path = Path(candidate)
        if not candidate_path.is_file():
            raise FileNotFoundError(f"{candidate_path}: no such candidate file")
        opts = replace(options or EvalOptions(), **fields)  # an unknown name is a TypeError, a bad word a ValueError
        job = EvalJob(
            problem_path=str(problem.path),
            candidate_path=str(candidate_path.resolve()),
            target=self.target,
            seed=secrets.randbits(62) if seed is None else seed,
            device_index=self.device_index,
            **{
                **opts.fields(),
                # None: the platform's default, and always when fitness is measured against it (the cpu target
                # times torch.compile only when asked: it compiles C++ for seconds per case)
                "compile_baseline": (self.platform.compile_baseline or opts.baseline == "compile")
                if opts.compile_baseline is None
                else opts.compile_baseline,
            },
        )
        waited = self._previous_exit()
        worker = self._worker()
        self._busy.add(worker)
        try:
            result = self._run(worker, job)
        except BaseException:
            worker.kill()  # its events pipe too
            raise
        finally:
            self._busy.discard(worker)
            t0 = time.monotonic()
            worker.kill(keep_events=True)
            # Measured: the wait for the pipe's end after the result, then the kill (which does not wait for a
            # CUDA context's teardown: the worker's pipe ends before its exit).
            exit_s = worker.exit_wait + time.monotonic() - t0
            self._exiting.update(worker.exiting)  # GPU workers' only
            self._top_up()
        result = self._accept(worker, job, problem, result)
        result.stages["worker_exit"] = round(exit_s, 4)
        if waited:
            result.stages["previous_exit"] = round(waited, 4)
        return result

    def _previous_exit(self) -> float:
        """Wait (at most PREVIOUS_EXIT_S) for the last evaluation's processes to exit: one still tearing down its
        CUDA context holds device memory, which this evaluation's worker would count as another job's (and its
        review would say its timings may be disturbed). The result does not wait for that; the next evaluation
        does. Returns the seconds waited."""
        if not self._exiting:
            self._last_exiting = {}
            return 0.0
        t0 = time.monotonic()
        while (left := spawn.exiting(self._exiting)) and time.monotonic() - t0 < PREVIOUS_EXIT_S:
            time.sleep(0.005)
        self._exiting, self._last_exiting = {}, left
        if left:
            print(f"[kernelevolve] {len(left)} process(es) of the last evaluation had not exited", file=sys.stderr)
        return time.monotonic() - t0

    def _accept(self, worker: WorkerProcess, job: EvalJob, problem: Problem, result: EvalResult) -> EvalResult:
        """The parent's checks of a result the worker sent (eval/acceptance.py), once the worker is dead."""
        worker.close_events()
        if not worker.results:
            return result
        if worker.results > 1:
            return acceptance.reject(result, f"the events pipe held {worker.results} results for one job")
        found = acceptance.mismatches(result, job, _hash_of(Path(problem.path)), _hash_of(Path(job.candidate_path)))
        return acceptance.reject(result, "; ".join(found)) if found else result

    def prebuild(self, problem: Problem, candidate: str | Path) -> EvalResult:
        """Build the candidate's C++/CUDA extensions into the extension cache, in a worker of its own (never a
        spare: those are the evaluations'), while this evaluator may be evaluating another candidate: its own
        evaluation then loads them. Nothing is judged; the result says only whether the import succeeded."""
        job = EvalJob(
            problem_path=str(problem.path),
            candidate_path=str(Path(candidate).resolve()),
            target=self.target,
            seed=0,
            device_index=self.device_index,
            timed=False,
            build_only=True,
        )
        worker = self._new_worker()
        self._busy.add(worker)
        try:
            return self._run(worker, job)
        finally:
            self._busy.discard(worker)
            worker.kill()

    def _run(self, worker: WorkerProcess, job: EvalJob) -> EvalResult:
        asked = time.monotonic()
        try:
            ready = worker.next_event(asked + READY_TIMEOUT_S)
        except (TimeoutError, WorkerExited):
            ready = None
        if not ready or ready.get("event") != Event.READY:
            return self._crashed(worker, job, "the worker process failed to start")
        # worker_start: how long the worker took to start; worker_wait: the part of it this evaluation waited
        # for (zero when a spare was ready in time).
        ready_at = float(ready.get("t", asked))
        worker_start = ready_at - worker.started
        worker_wait = max(0.0, ready_at - asked)
        if self.platform.separate_device() and not job.build_only:
            job = job.model_copy(update={"holders": self._holders(worker)})
        worker.send_job(job)
        left = {False: self.timeout_s, True: self.compile_timeout_s}  # seconds left on each clock: compiling or not
        trusted_done = False
        clock = time.monotonic()
        while True:
            on_compile = compiling(worker.last_stage)
            try:
                event = worker.next_event(clock + left[on_compile])
            except TimeoutError:
                worker.kill()
                result = self._base(job, Status.TIMEOUT, self._timeout_reason(worker.last_stage, left))
                break
            except WorkerExited:  # a crash, whatever the process it left behind does with the pipe
                result = self._crashed(worker, job, "a process the worker started still holds its events pipe")
                break
            now = time.monotonic()
            left[on_compile] -= now - clock  # the time up to this event went to the stage before it
            clock = now
            if event is None:
                result = self._crashed(worker, job, "")
                break
            kind = event.get("event")
            if kind == Event.RESULT:
                worker.results += 1
                try:
                    result = EvalResult.model_validate(event.get("result"))
                except ValueError as e:  # pydantic's ValidationError: not a result the harness wrote
                    result = acceptance.reject(self._base(job, Status.OK, ""), f"a malformed result ({e})"[:600])
                # The worker closes the pipe right after its result: reading to its end counts a result the
                # candidate wrote before the harness's own (eval/acceptance.py).
                t_end = time.monotonic()
                worker.count_results(t_end + min(RESULT_DRAIN_S, max(left[False], 0.0)))
                worker.exit_wait = time.monotonic() - t_end  # the pipe's end: part of worker_exit
                break
            if kind == Event.TRUSTED_DONE:
                # Only the first, and never for a build-only job (whose worker never ends a trusted phase): the
                # harness sends it before any candidate code exists, so a later one is the candidate's.
                if not trusted_done and not job.build_only:
                    trusted_done = True
                    worker.end_trusted_phase()
                    clock = time.monotonic()  # copying the trusted phase's cache writes is ours: on neither clock
                continue
            if kind == Event.PROBLEM_ERROR:
                # Raised (it stops a search) only where the harness can have sent it: in phase A of a full job.
                if trusted_done or job.build_only:
                    result = acceptance.reject(
                        self._base(job, Status.OK, ""), "a problem error after the candidate loaded"
                    )
                    break
                raise ProblemError(str(event.get("message", "")))
            if kind == Event.ERROR:
                result = self._base(job, Status.CRASHED, f"the worker failed: {event.get('message', '')}")
                break
            if kind == Event.HARNESS_LIMIT:
                result = self._base(job, Status.HARNESS_LIMIT, str(event.get("message", "")))
                break
        result.stages = {"worker_start": round(worker_start, 4), "worker_wait": round(worker_wait, 4), **result.stages}
        result.sandbox = self._confinement(job.target)
        if self.platform.candidate_in_judge() and not job.build_only:
            result.degraded.append("judge split: off (KERNELEVOLVE_GPU_JUDGE=in-process)")
        # What the candidate printed goes on to the store, the screen and the model's prompt: credentials out.
        result.log_tail = redact(worker.log_tail())
        result.reason = redact(result.reason)
        result.review = [redact(line) for line in result.review]
        return result

    def _holders(self, worker: WorkerProcess) -> dict[str, list[int]] | None:
        """Who else holds the device as this worker's job goes out (eval/holders.py)."""
        spares = [w.proc.pid for w in self._spares]
        evaluation = spawn.process_tree(worker.proc.pid)
        return holders.census(self.device_index, evaluation, spares, self._last_exiting)

    def _timeout_reason(self, stage: str, left: dict[bool, float]) -> str:
        if compiling(stage):
            return (
                f"timed out during {stage}: compiling ran past {self.compile_timeout_s:g} s (the compile "
                "deadline); raise --compile-timeout if the machine is busy; worker killed"
            )
        built = self.compile_timeout_s - left[True]
        builds = f" (not counting {built:.0f} s of compiles)" if built >= 0.5 else ""
        hint = ""
        if stage == "compile":  # the candidate's import: its Python, and JIT compiles other than extension builds
            hint = " (loading the candidate counts against --timeout; its C++/CUDA extension builds do not)"
        return f"timed out after {self.timeout_s:g} s{builds} during {stage}; worker killed{hint}"

    def _crashed(self, worker: WorkerProcess, job: EvalJob, what: str) -> EvalResult:
        try:
            code = worker.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            code = worker.kill()
        if spawn.out_of_memory(worker.proc):
            cause = (
                f"out of memory: the candidate's processes together exceeded the {worker.memory_limit / 2**30:.3g} GiB"
                " memory limit, and the kernel killed one"
            )
        elif code < 0:
            cause = f"the worker was killed by {_signal_name(code)}"
            if code == -signal.SIGKILL:
                cause += " (out of memory?)"
        else:
            cause = f"the worker exited with status {code} before reporting"
        reason = f"{what + ': ' if what else ''}{cause} during {worker.last_stage}"
        result = self._base(job, Status.CRASHED, reason)
        result.log_tail = worker.log_tail()
        return result

    def _base(self, job: EvalJob, status: Status, reason: str) -> EvalResult:
        return EvalResult(
            status=status,
            correct=False,
            reason=reason,
            target=job.target,
            sandbox=self._confinement(job.target),
        ).finalize()

    def _confinement(self, target: str) -> str:
        platform = get_platform(target)
        return sandbox.describe(memory_limited=not platform.separate_device(), in_judge=platform.candidate_in_judge())

    def close(self) -> None:
        """Kill the spare workers and any evaluating now (an interrupted search leaves nothing running)."""
        self._closed = True
        while self._spares:
            self._spares.pop().kill()
        for worker in list(self._busy):
            worker.kill()

    def __enter__(self) -> Evaluator:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def evaluators(target: str, devices: str = "0", **options: object) -> list[Evaluator]:
    """One evaluator per GPU index in `devices` ("0,1,2,3"), each with spare workers; one on the cpu target, where
    concurrent timings would disturb each other. ValueError for indices that are not integers."""
    try:
        indices = [int(d) for d in devices.split(",")] if get_platform(target).separate_device() else [0]
    except ValueError:
        raise ValueError(f"--devices must be comma-separated GPU indices, not {devices!r}") from None
    return [Evaluator(target, prestart=True, device_index=i, **options) for i in indices]  # type: ignore[arg-type]
