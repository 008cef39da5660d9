"""Worker process main (`python -m kernelevolve.eval.worker`): import torch once, say ready, run exactly one job,
report, exit.

Events go to a dedicated pipe (one JSON object per line), never stdout: the candidate's prints and
the tracebacks land in the worker's log, whose tail the parent records.
"""

from __future__ import annotations

import json
import os
import resource
import socket
import stat
import sys
import threading
import time
import traceback
from typing import TYPE_CHECKING

from kernelevolve.eval.wire import (
    DEVICE_ENV,
    LIFELINE_ENV,
    MEMORY_LIMIT_ENV,
    RESULT_FD_ENV,
    STAGE_LINE,
    Event,
    gpu_judge_split,
)
from kernelevolve.eval.worker import allocator

if TYPE_CHECKING:
    from kernelevolve.eval.wire import EvalJob


def _limit_resources() -> None:
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))  # a segfaulting candidate leaves no core file


def _cap_address_space() -> None:
    """The host memory cap of the cpu target, per process: the limit on top of the address space mapped once torch
    is imported. A CUDA build of torch maps gigabytes of libraries it never reads on the cpu target; a cap counted
    from zero refused that import under a limit its memory use was far from (the worker then died before it
    reported). Over the whole process tree the memory cgroup (eval/launch/cgroup.py) holds the limit itself."""
    limit = int(os.environ.get(MEMORY_LIMIT_ENV) or 0)
    if limit <= 0:
        return
    mapped = 0
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmSize:"):
                    mapped = int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):  # not Linux: counted from zero
        pass
    resource.setrlimit(resource.RLIMIT_AS, (mapped + limit, mapped + limit))


def _watch_the_evaluator() -> None:
    """Exit when the evaluator is gone: its end of the lifeline pipe closes with it (also on kill -9), and nothing
    would ever read this worker's result. A thread of the harness's own, started before any candidate code."""
    raw = os.environ.pop(LIFELINE_ENV, "")
    if not raw:
        return
    fd = int(raw)

    def wait() -> None:
        try:
            while os.read(fd, 64):
                pass
        except OSError:
            pass
        os._exit(70)

    threading.Thread(target=wait, name="kernelevolve-lifeline", daemon=True).start()


def _undumpable() -> None:
    """The judge's /proc entries (its memory, its descriptors) become unreadable to processes of its own user
    without CAP_SYS_PTRACE: the candidate's process, forked before, cannot read the references or write to the
    events pipe through /proc/<pid>/mem or /proc/<pid>/fd."""
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(4, 0, 0, 0, 0)  # PR_SET_DUMPABLE, 0
    except (OSError, AttributeError):  # not Linux
        pass


def _import_triton() -> None:
    """Triton's import, paid by a spare before its job arrives. Nothing here touches the GPU: a spare worker holds
    no device memory; each process makes its CUDA context once its job has come (launches.warm_up)."""
    try:
        import triton  # noqa: F401
    except Exception:  # noqa: BLE001 - no Triton: nothing to import
        pass


_dumps, _write = json.dumps, os.write  # bound before any candidate could re-bind json.dumps or os.write


def _events_fd() -> int:
    """The events pipe's write end: the descriptor RESULT_FD_ENV names, or the pipe received over it where it is a
    socket (the evaluator hands the pipe over so that no launcher in between holds it: eval/evaluator.py)."""
    fd = int(os.environ.pop(RESULT_FD_ENV))
    if not stat.S_ISSOCK(os.fstat(fd).st_mode):
        return fd
    with socket.socket(fileno=fd) as hand:
        _, fds, _, _ = socket.recv_fds(hand, 16, 1)
    if len(fds) != 1:
        sys.exit("kernelevolve worker: the evaluator handed over no events pipe")
    return fds[0]


def main() -> None:
    # The descriptors leave the environment, where a candidate would look for them first.
    fd = _events_fd()
    from kernelevolve.eval.builds.extension_cache import take_channel

    builds = take_channel()

    def send(event: dict) -> None:
        data = (_dumps(event) + "\n").encode()
        while data:
            data = data[_write(fd, data) :]

    _limit_resources()
    allocator.fix_thresholds()  # before the fork: the candidate's process inherits them
    runner = None
    device = os.environ.get(DEVICE_ENV)
    if not device or gpu_judge_split():
        # The candidate gets a process of its own, forked now, before the job and before CUDA exist here.
        import torch  # imported once, before the fork: both processes have it

        from kernelevolve.eval.worker import runner as candidate_process

        if not device:
            _cap_address_space()  # the candidate's process inherits it
        gpu = torch.device("cuda", int(device)) if device else None
        _import_triton()  # before the fork: both processes have it
        runner = candidate_process.start(builds, close=[fd], device=gpu)
        _undumpable()
    _watch_the_evaluator()
    _import_triton()
    from kernelevolve.eval.wire import EvalJob
    from kernelevolve.eval.worker.harness import run_job
    from kernelevolve.problem.problem import ProblemError

    send({"event": Event.READY, "t": time.monotonic()})  # the parent reads the start time from it (same clock)
    line = sys.stdin.readline()
    if not line:
        os._exit(0)
    job = EvalJob.model_validate_json(line)

    def report(stage: str) -> None:
        print(f"{STAGE_LINE}{stage}", file=sys.stderr, flush=True)
        send({"event": Event.STAGE, "stage": stage, "t": time.time()})

    def end_of_trusted() -> None:
        send({"event": Event.TRUSTED_DONE})
        sys.stdin.readline()  # the evaluator has kept what the trusted phase wrote into the shared caches

    try:
        result = run_job(job, report, builds, end_of_trusted, runner)
        send({"event": Event.RESULT, "result": result.model_dump(mode="json")})
    except ProblemError as e:
        send({"event": Event.PROBLEM_ERROR, "message": str(e)})
    except BaseException as e:  # noqa: BLE001 - anything else escaping the harness, e.g. SystemExit
        traceback.print_exc()
        limit = _device_short(e, job)
        message = limit or f"{type(e).__name__}: {e}"
        send({"event": Event.HARNESS_LIMIT if limit else Event.ERROR, "message": message})
    sys.stdout.flush()
    sys.stderr.flush()
    # The pipe's end tells the parent that nothing more comes: given now, not when the exit has torn down a CUDA
    # context (a tenth of a second), the parent reads it and kills at once. (A copy a candidate made of it in this
    # process, KERNELEVOLVE_GPU_JUDGE=in-process, still holds it open till the exit, as before.)
    os.close(fd)
    # Skip interpreter teardown: atexit hooks a candidate registered never run, and exit is fast.
    os._exit(0)


def _device_short(e: BaseException, job: EvalJob) -> str:
    """Why an out-of-memory error on a GPU is the harness's limit ("" where it may be the candidate's)."""
    import torch

    from kernelevolve.platforms import accelerator

    device = accelerator(job.device_index) if isinstance(e, torch.OutOfMemoryError) else None
    if device is None:
        return ""
    from kernelevolve.eval.worker import memory

    try:
        held, total = memory.others_bytes(device)  # the device run_job chose
    except Exception:  # noqa: BLE001 - the device cannot say: the error stands as it is
        return ""
    return memory.out_of_memory_limit(held, total, job.holders)


if __name__ == "__main__":
    main()
