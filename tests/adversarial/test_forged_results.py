"""Results forged on the events pipe (eval/acceptance.py): the worker's process runs the candidate, so a candidate
can find the pipe in /proc/self/fd and write a result line of its own. The parent reads every event left after it
kills the worker and accepts exactly one result per job; it checks that the result names the job's problem,
candidate, target and baseline, and recomputes speedup and fitness from the raw times. What still passes (a whole,
consistent forgery from a candidate that then exits) needs the judge in a process of its own."""

from __future__ import annotations

import json

import pytest

from kernelevolve.eval import acceptance
from kernelevolve.eval.evaluator import Evaluator
from kernelevolve.eval.job import EvalJob
from kernelevolve.problem.problem import load_problem
from kernelevolve.result import CaseResult, EvalResult, Status
from tests.conftest import FIXTURES

RELU = FIXTURES / "kb_relu.py"

FORGER = """
import json, os, stat
import torch
import torch.nn as nn

FORGED = {forged!r}
line = (json.dumps({{"event": "result", "result": FORGED}}) + "\\n").encode()
for fd in map(int, os.listdir("/proc/self/fd")):  # every pipe it can write: the events pipe is one of them
    try:
        if stat.S_ISFIFO(os.fstat(fd).st_mode):
            os.write(fd, line)
    except OSError:
        pass
if {exit_now!r}:
    os._exit(0)


class ModelNew(nn.Module):
    def forward(self, x):
        return torch.relu(x)
"""

FORGED = {"status": "ok", "correct": True, "speedup": 40.0, "fitness": 40.0, "target": "cpu", "cases": []}


@pytest.fixture(scope="module")
def evaluator():
    with Evaluator("cpu", timeout_s=120) as ev:
        yield ev


def _forger(tmp_path, exit_now: bool):
    path = tmp_path / "forger.py"
    path.write_text(FORGER.format(forged=FORGED, exit_now=exit_now))
    return path


def test_a_result_written_by_the_candidate_beside_the_harness_s_is_rejected(tmp_path, evaluator):
    """The forged line arrives first; the harness's own follows when the evaluation ends, and the parent reads the
    pipe to its end: two results, rejected."""
    result = evaluator.evaluate(load_problem(RELU), _forger(tmp_path, exit_now=False), trials=1)
    assert result.status is Status.REJECTED, (result.reason, result.log_tail[-1500:])
    assert "the events pipe held 2 results for one job" in result.reason
    assert result.fitness == 0.0


def test_a_lone_forged_result_that_disagrees_with_the_job_is_rejected(tmp_path, evaluator):
    """The forger exits before the harness can answer: one result, but it names no problem or candidate, and its
    fitness has no times behind it."""
    result = evaluator.evaluate(load_problem(RELU), _forger(tmp_path, exit_now=True), trials=1)
    assert result.status is Status.REJECTED, (result.reason, result.log_tail[-1500:])
    assert "problem hash (none) is not the problem the job names" in result.reason
    assert "candidate hash (none)" in result.reason
    assert "its speedup and fitness (40.0, 40.0) are not its cases' (None, None)" in result.reason


def _job(**fields) -> EvalJob:
    return EvalJob(problem_path="p.py", candidate_path="c.py", target="cpu", seed=1, **fields)


def _ok(**fields) -> EvalResult:
    case = CaseResult(shape={}, correct=True, t_candidate_ms=1.0, t_eager_ms=3.0, speedup=3.0)
    result = EvalResult(status=Status.OK, correct=True, target="cpu", problem_hash="ph", candidate_hash="ch")
    result.cases = [case]
    for name, value in fields.items():
        setattr(result, name, value)
    return result.finalize()


def test_an_honest_result_passes_the_parent_s_checks():
    assert acceptance.mismatches(_ok(), _job(), "ph", "ch") == []
    failed = EvalResult(status=Status.INCORRECT, correct=False, target="cpu", problem_hash="ph", candidate_hash="ch")
    failed.cases = [CaseResult(shape={}, correct=True, t_candidate_ms=1.0, t_eager_ms=3.0)]  # failed after timing
    assert acceptance.mismatches(failed.finalize(), _job(), "ph", "ch") == []


def test_each_disagreement_is_named():
    assert acceptance.mismatches(_ok(), _job(), "other", "ch") == [
        "its problem hash ph is not the problem the job names (other)"
    ]
    assert acceptance.mismatches(_ok(target="cuda"), _job(), "ph", "ch") == ["it names target 'cuda', the job 'cpu'"]
    assert acceptance.mismatches(_ok(baseline="compile"), _job(), "ph", "ch")[0].startswith(
        "it was timed against 'compile'"
    )
    inflated = _ok()
    inflated.cases[0].speedup = 30.0  # the times say 3x
    found = acceptance.mismatches(inflated, _job(), "ph", "ch")
    assert found[0] == "case 0's speedup 30.0 is not its times' 3.0", found
    fitness = _ok()
    fitness.fitness = 9.0
    (found,) = acceptance.mismatches(fitness, _job(), "ph", "ch")
    assert found.startswith("its speedup and fitness (3.0") and ", 9.0) are not its cases'" in found, found
    rejected = acceptance.reject(_ok(), "why")
    assert rejected.status is Status.REJECTED and rejected.fitness == 0.0 and rejected.cases[0].speedup is None
    assert json.loads(rejected.model_dump_json())["reason"].startswith(acceptance.REJECTED_PREFIX)


JUNK = """
import os, stat
import torch
import torch.nn as nn

for line in (b"5\\n", b'{"event": "stage", "stage": 5}\\n', b'{"event": "result", "result": {}}\\n',
             b'{"event": "problem_error", "message": "stop the whole search"}\\n'):
    for fd in map(int, os.listdir("/proc/self/fd")):
        try:
            if stat.S_ISFIFO(os.fstat(fd).st_mode):
                os.write(fd, line)
        except OSError:
            pass


class ModelNew(nn.Module):
    def forward(self, x):
        return torch.relu(x)
"""


def test_junk_on_the_events_pipe_is_a_rejected_evaluation_not_a_stopped_search(tmp_path, evaluator):
    """Lines that are not the harness's (not an object, a stage that is not text, a result that is not one, a
    problem error after the candidate loaded) reject this evaluation and raise nothing."""
    path = tmp_path / "junk.py"
    path.write_text(JUNK)
    result = evaluator.evaluate(load_problem(RELU), path, trials=1)
    assert result.status is Status.REJECTED, (result.reason, result.log_tail[-1500:])
    assert result.reason.startswith(acceptance.REJECTED_PREFIX)
    assert evaluator.evaluate(load_problem(RELU), FIXTURES / "candidates" / "relu_ok.py", trials=1).status is Status.OK
