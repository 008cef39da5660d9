"""Results forged on the events pipe. On the cpu target the candidate runs in a process of its own, forked before
the job arrived with the events pipe closed, and the judge's /proc entries are closed to it: every pipe it can find
in /proc/self/fd is not the result channel, and the verdict is the judge's. Where the candidate shares the judge's
process (GPU targets until their split), it can write a result line of its own; the parent reads every event left
after it kills the worker and accepts exactly one result per job, checks that the result names the job's problem,
candidate, target and baseline, and recomputes speedup and fitness from the raw times (eval/acceptance.py, whose
rules the tests below check directly)."""

from __future__ import annotations

import json

import pytest

from kernelevolve.eval import acceptance
from kernelevolve.eval.evaluator import Evaluator
from kernelevolve.eval.wire import EvalJob
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


def test_a_result_the_candidate_writes_never_reaches_the_parent(tmp_path, evaluator):
    """The forger writes a 40x result to every pipe its process holds: none is the events pipe, and the verdict
    is the judge's, for what the kernel is (an honest ReLU at eager's speed)."""
    result = evaluator.evaluate(load_problem(RELU), _forger(tmp_path, exit_now=False), trials=1)
    assert result.status is Status.OK, (result.reason, result.log_tail[-1500:])
    assert result.problem_hash and result.candidate_hash
    assert result.speedup is not None and result.speedup < 2.5, result.speedup


def test_a_forger_that_then_exits_is_a_crashed_candidate(tmp_path, evaluator):
    """The forger writes its result and exits at import: its process is gone, and the judge says so."""
    result = evaluator.evaluate(load_problem(RELU), _forger(tmp_path, exit_now=True), trials=1)
    assert result.status is Status.CRASHED, (result.reason, result.log_tail[-1500:])
    assert "the candidate's process exited with status 0" in result.reason
    assert result.fitness == 0.0


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


def test_junk_on_every_pipe_the_candidate_holds_stops_nothing(tmp_path, evaluator):
    """Lines that are not the harness's (not an object, a stage that is not text, a result that is not one, a
    problem error) written to every pipe the candidate's process holds: the evaluation ends with the judge's own
    verdict, and the next one runs."""
    path = tmp_path / "junk.py"
    path.write_text(JUNK)
    result = evaluator.evaluate(load_problem(RELU), path, trials=1)
    assert result.status is Status.OK, (result.reason, result.log_tail[-1500:])
    assert evaluator.evaluate(load_problem(RELU), FIXTURES / "candidates" / "relu_ok.py", trials=1).status is Status.OK
