"""Worker process main: import torch once, say ready, run exactly one job, report, exit.

Events go to a dedicated pipe (one JSON object per line), never stdout: the candidate's prints and
the tracebacks land in the worker's log, whose tail the parent records.
"""

from __future__ import annotations

import json
import os
import resource
import sys
import time
import traceback

RESULT_FD_ENV = "KERNELEVOLVE_RESULT_FD"
MEMORY_LIMIT_ENV = "KERNELEVOLVE_MEMORY_LIMIT_BYTES"
DEVICE_ENV = "KERNELEVOLVE_GPU_INDEX"  # set for GPU targets: the device to initialise before the job


def _limit_resources() -> None:
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))  # a segfaulting candidate leaves no core file
    limit = int(os.environ.get(MEMORY_LIMIT_ENV) or 0)
    if limit > 0:  # host memory cap (cpu target only: CUDA reserves far more address space than it uses)
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))


def _warm_up_device() -> None:
    """Pay the fixed start-up costs before the job arrives: Triton's import and driver, and, for GPU
    targets, the CUDA context and the profiler's first start (CUPTI). Started here, the profiler costs the
    evaluation nothing: the kernel-launch check after timing took 3.3 s without it and 0.01 s with it on the
    H200. Launches cost the host ~2-3 us more once CUPTI is up; the event-timed medians, which fitness uses,
    still agree with do_bench within 1.2% (docs/benchmarks/harness.md, run 12)."""
    import torch

    try:
        import triton

        if os.environ.get(DEVICE_ENV) and torch.cuda.is_available():
            triton.runtime.driver.active.get_current_device()
    except Exception:  # noqa: BLE001 - no Triton, or a Triton without a GPU driver: nothing to warm
        pass
    device = os.environ.get(DEVICE_ENV)
    if device and torch.cuda.is_available():
        torch.cuda.set_device(int(device))
        probe = torch.empty(1, device="cuda")
        probe.zero_()
        from kernelevolve.eval.launches import device_events

        device_events(probe.zero_, probe.device)


_dumps, _write = json.dumps, os.write  # bound before any candidate could re-bind json.dumps or os.write


def main() -> None:
    # The descriptor leaves the environment, where a candidate would look for it first.
    fd = int(os.environ.pop(RESULT_FD_ENV))

    def send(event: dict) -> None:
        data = (_dumps(event) + "\n").encode()
        while data:
            data = data[_write(fd, data) :]

    _limit_resources()
    _warm_up_device()
    from kernelevolve.eval.harness import run_job
    from kernelevolve.eval.job import EvalJob
    from kernelevolve.problem.problem import ProblemError

    send({"event": "ready", "t": time.monotonic()})  # the parent reads the start time from it (same clock)
    line = sys.stdin.readline()
    if not line:
        os._exit(0)
    job = EvalJob.model_validate_json(line)

    def report(stage: str) -> None:
        print(f"[kernelevolve worker] {stage}", file=sys.stderr, flush=True)
        send({"event": "stage", "stage": stage, "t": time.time()})

    try:
        result = run_job(job, report)
        send({"event": "result", "result": result.model_dump(mode="json")})
    except ProblemError as e:
        send({"event": "problem_error", "message": str(e)})
    except BaseException as e:  # noqa: BLE001 - anything else escaping the harness, e.g. SystemExit
        traceback.print_exc()
        send({"event": "error", "message": f"{type(e).__name__}: {e}"})
    sys.stdout.flush()
    sys.stderr.flush()
    # Skip interpreter teardown: atexit hooks a candidate registered never run, and exit is fast.
    os._exit(0)


if __name__ == "__main__":
    main()
