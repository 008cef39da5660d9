"""A worker that leaves a process holding its events pipe and then crashes is a crash, said as such, not a
timeout (first round of issue 45): the evaluator stops waiting for the pipe's end once the worker has exited."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time

from kernelevolve.eval.evaluator import Evaluator, WorkerProcess
from kernelevolve.eval.wire import EvalJob
from kernelevolve.result import Status

# Says it is ready, takes its job, leaves a daemon of its own session holding the events pipe, and dies.
WORKER = """
import json, os, sys, time
fd = int(sys.argv[1])
os.write(fd, (json.dumps({"event": "ready", "t": time.monotonic()}) + "\\n").encode())
sys.stdin.readline()
if os.fork() == 0:
    os.setsid()
    time.sleep(20)  # past the test's bound, short of its timeout
    os._exit(0)
os._exit(3)
"""


def _worker_holding_its_pipe() -> tuple[WorkerProcess, subprocess.Popen]:
    read_fd, write_fd = os.pipe()
    proc = subprocess.Popen(
        [sys.executable, "-c", WORKER, str(write_fd)],
        stdin=subprocess.PIPE,
        pass_fds=(write_fd,),
        start_new_session=True,
    )
    os.close(write_fd)
    worker = WorkerProcess.__new__(WorkerProcess)
    worker.proc, worker.started, worker.gpu = proc, time.monotonic(), False
    worker._events, worker._buffer, worker.last_stage = os.fdopen(read_fd, "rb", buffering=0), b"", "start"
    worker.log, worker.results, worker.exit_wait, worker.exiting, worker._lifeline = (
        tempfile.TemporaryFile(),
        0,
        0.0,
        {},
        -1,
    )
    return worker, proc


def test_a_worker_that_crashes_leaving_its_pipe_held_is_a_crash_not_a_timeout():
    worker, proc = _worker_holding_its_pipe()
    job = EvalJob(problem_path="p.py", candidate_path="c.py", target="cpu", seed=1)
    ev = Evaluator("cpu", timeout_s=30)
    start = time.monotonic()
    try:
        result = ev._run(worker, job)
    finally:
        worker._events.close()
        ev.close()
    assert result.status is Status.CRASHED, result.reason
    assert time.monotonic() - start < 15
    assert "still holds its events pipe" in result.reason and "status 3" in result.reason, result.reason
    assert proc.returncode == 3
