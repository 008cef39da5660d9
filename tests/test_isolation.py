"""Every way a candidate can fail is recorded with its status, and the next evaluation still works."""

from __future__ import annotations

import time

import pytest

from kernelevolve.result import Status
from tests.conftest import CANDIDATES

FAILURES = [
    ("syntax_error.py", Status.COMPILE_ERROR, "syntax error at line 4"),
    ("no_modelnew.py", Status.COMPILE_ERROR, "does not define class ModelNew"),
    ("raises.py", Status.RUNTIME_ERROR, "invalid configuration"),
    ("exits.py", Status.CRASHED, "exited with status 3"),
    ("segfault_native.py", Status.CRASHED, "SIGSEGV"),
    ("exhausts_memory.py", Status.RUNTIME_ERROR, "can't allocate memory"),
    ("relu_wrong.py", Status.INCORRECT, "beyond the error budget"),
    ("modifies_input.py", Status.INCORRECT, "input 0 was modified"),
]


def _assert_good(evaluator, problem):
    result = evaluator.evaluate(problem, CANDIDATES / "relu_ok.py")
    assert result.status is Status.OK, result.reason
    assert result.correct and result.fitness and result.fitness > 0


@pytest.mark.parametrize("candidate,status,why", FAILURES, ids=[f[0] for f in FAILURES])
def test_failure_is_recorded_and_next_evaluation_runs(cpu_evaluator, relu_problem, candidate, status, why):
    result = cpu_evaluator.evaluate(relu_problem, CANDIDATES / candidate)
    assert result.status is status, (result.reason, result.log_tail)
    assert why in result.reason
    assert not result.correct and result.fitness == 0
    assert result.log_tail, "the worker's log tail is recorded"
    _assert_good(cpu_evaluator, relu_problem)


def test_stages_say_what_the_evaluation_waited_for(cpu_evaluator, relu_problem):
    """How long the worker took to start, how much of that this evaluation waited for (a spare may have been
    ready before it was asked for), and how long the killed worker took to exit."""
    result = cpu_evaluator.evaluate(relu_problem, CANDIDATES / "relu_ok.py")
    stages = result.stages
    assert {"worker_start", "worker_wait", "load", "compile", "correctness", "timing", "worker_exit"} <= set(stages)
    assert stages["worker_start"] > 0 and stages["worker_exit"] >= 0
    assert 0 <= stages["worker_wait"] <= stages["worker_start"]
    # The load stage by part: what it spent drawing inputs and calling the reference, within the stage's total
    parts = {k: v for k, v in stages.items() if k.startswith("load.")}
    assert set(parts) == {"load.inputs", "load.reference", "load.oracle"}, stages  # no compile baseline on cpu
    assert all(v > 0 for v in parts.values()) and sum(parts.values()) <= stages["load"]
    # The compile stage by part: loading the candidate (its process, its extensions) and its first call per case
    assert stages["compile.load"] > 0 and stages["compile.first_calls"] > 0
    assert stages["compile.load"] + stages["compile.first_calls"] == pytest.approx(stages["compile"])


def test_an_evaluation_waits_for_the_last_one_s_processes_to_exit(cpu_evaluator, relu_problem):
    """On a GPU, a killed worker's processes release their CUDA contexts and memory as they exit, which the kill
    does not wait for: the next evaluation waits for them (its worker would count their memory as another job's),
    and its stages say how long. Here a process that exits after a second stands for them."""
    import subprocess

    from kernelevolve.eval.launch import spawn

    slow = subprocess.Popen(["sleep", "1"])
    try:
        cpu_evaluator._exiting = spawn.process_tree(slow.pid)  # a GPU worker's kill leaves them there
        assert list(cpu_evaluator._exiting) == [slow.pid]
        result = cpu_evaluator.evaluate(relu_problem, CANDIDATES / "relu_ok.py", timed=False)
    finally:
        slow.wait()
    assert result.status is Status.OK, result.reason
    assert 0.3 < result.stages["previous_exit"] < 5 and cpu_evaluator._exiting == {}
    again = cpu_evaluator.evaluate(relu_problem, CANDIDATES / "relu_ok.py", timed=False)
    assert "previous_exit" not in again.stages  # a cpu worker leaves nothing to wait for


def test_infinite_loop_is_killed_near_the_timeout(relu_problem):
    from kernelevolve.eval.evaluator import Evaluator

    with Evaluator("cpu", timeout_s=4) as ev:
        t0 = time.monotonic()
        result = ev.evaluate(relu_problem, CANDIDATES / "hangs.py")
        elapsed = time.monotonic() - t0 - result.stages["worker_start"]
        assert result.status is Status.TIMEOUT
        assert "timed out after 4 s during correctness" in result.reason
        assert 4 <= elapsed < 8
        _assert_good(ev, relu_problem)


def test_patching_torch_is_rejected_and_does_not_leak(cpu_evaluator, tmp_path, relu_problem):
    """A candidate that re-binds a torch function (which would slow the baseline) is rejected, and the
    patch cannot reach the next candidate's process."""
    poison = tmp_path / "poison.py"
    poison.write_text(
        "import torch\nimport torch.nn as nn\n"
        "torch.relu = lambda x: x * 0\n"
        "class ModelNew(nn.Module):\n    def forward(self, x):\n        return x.clamp_min(0)\n"
    )
    first = cpu_evaluator.evaluate(relu_problem, poison)
    assert first.status is Status.REJECTED
    assert "torch.relu" in first.reason
    _assert_good(cpu_evaluator, relu_problem)


ORPHANED = """
import sys
from pathlib import Path
sys.path.insert(0, {root!r})
from kernelevolve.eval.evaluator import Evaluator
from kernelevolve.problem.problem import load_problem
with Evaluator("cpu", timeout_s=600) as ev:
    ev.evaluate(load_problem(Path({problem!r})), Path({candidate!r}), trials=1)
"""
BEATS = """
import time
import torch.nn as nn

class ModelNew(nn.Module):
    def forward(self, x):
        i = 0
        while True:  # a hang, beating so that the test sees whether it still runs
            i += 1
            with open({beat!r}, "w") as f:
                f.write(str(i))
            time.sleep(0.1)
"""


def test_a_worker_does_not_outlive_an_evaluator_killed_mid_evaluation(tmp_path, relu_problem, sandbox_writable):
    """kill -9 of the process that evaluates (optimize, bench) while a candidate hangs: the worker sees its
    lifeline close and exits, instead of running the hang for ever."""
    import signal
    import subprocess
    import sys
    import time

    from tests.conftest import ROOT
    from tests.test_spawn import _stopped

    beat = sandbox_writable / "beat"
    candidate = tmp_path / "hangs.py"
    candidate.write_text(BEATS.format(beat=str(beat)))
    script = ORPHANED.format(root=str(ROOT), problem=str(relu_problem.path), candidate=str(candidate))
    parent = subprocess.Popen([sys.executable, "-c", script], cwd=ROOT)
    try:
        deadline = time.monotonic() + 120
        while not beat.exists() and time.monotonic() < deadline:
            time.sleep(0.2)
        assert beat.exists(), "the candidate never ran"
        assert not _stopped(beat, wait_s=2), "the candidate was not running"
    finally:
        parent.send_signal(signal.SIGKILL)
        parent.wait()
    assert _stopped(beat), "the worker outlived the killed evaluator"


def test_the_harness_keeping_its_cache_writes_is_on_neither_clock(relu_problem, monkeypatch):
    """At the end of the trusted phase the evaluator copies what it wrote into the shared caches while the worker
    waits; a slow copy (a large inductor cache, a slow disk) is the harness's time, not the candidate's."""
    from kernelevolve.eval.evaluator import Evaluator, WorkerProcess

    timeout_s = 8.0
    keep = WorkerProcess.end_trusted_phase

    def slow_copy(self):
        time.sleep(timeout_s)
        keep(self)

    monkeypatch.setattr(WorkerProcess, "end_trusted_phase", slow_copy)
    with Evaluator("cpu", timeout_s=timeout_s) as ev:
        result = ev.evaluate(relu_problem, CANDIDATES / "relu_ok.py")
    assert result.status is Status.OK, result.reason
