"""The shipped examples on the cpu target: Triton through the interpreter (correct, untimed), C++
compiled and timed for real, the deliberately wrong candidates rejected as incorrect."""

from __future__ import annotations

import pytest

from kernelevolve.eval.worker import hostload
from kernelevolve.problem.problem import load_problem
from kernelevolve.result import Status
from tests.conftest import CANDIDATES, EXAMPLES, FIXTURES

NAMES = ["softmax", "rmsnorm"]


@pytest.mark.parametrize("name", NAMES)
def test_triton_candidate_is_correct_in_the_interpreter(cpu_evaluator, name):
    problem = load_problem(EXAMPLES / name / "problem.py")
    result = cpu_evaluator.evaluate(problem, EXAMPLES / name / "candidate_triton.py")
    assert result.status is Status.OK, (result.reason, result.log_tail)
    assert result.interpreted and result.languages == ["triton"]
    assert result.speedup is None and all(c.t_candidate_ms is None for c in result.cases)
    assert len(result.cases) >= 2 and all(c.correct for c in result.cases)


@pytest.mark.parametrize("name", NAMES)
def test_cpp_candidate_is_correct_and_timed(cpu_evaluator, name):
    problem = load_problem(EXAMPLES / name / "problem.py")
    result = cpu_evaluator.evaluate(problem, EXAMPLES / name / "candidate_cpp.py")
    assert result.status is Status.OK, (result.reason, result.log_tail)
    assert result.languages == ["cpp"] and not result.interpreted
    assert result.speedup and result.speedup > 0 and result.fitness == result.speedup
    for case in result.cases:
        assert case.t_candidate_ms > 0 and case.t_eager_ms > 0 and case.t_candidate_iqr_ms is not None


@pytest.mark.parametrize("name", NAMES)
def test_wrong_candidate_is_incorrect(cpu_evaluator, name):
    problem = load_problem(EXAMPLES / name / "problem.py")
    result = cpu_evaluator.evaluate(problem, EXAMPLES / name / "candidate_wrong.py")
    assert result.status is Status.INCORRECT, result.reason
    assert result.fitness == 0 and result.reason
    assert any(not c.correct and c.max_abs_err for c in result.cases)


def test_triton_relu_on_a_kernelbench_file(cpu_evaluator, relu_problem):
    result = cpu_evaluator.evaluate(relu_problem, CANDIDATES / "relu_triton.py")
    assert result.status is Status.OK and result.interpreted


@pytest.mark.skipif(hostload._waited_ns() is None, reason="the kernel reports no run-queue wait (schedstat)")
def test_a_cpu_timing_that_waited_for_cores_is_listed_for_review(cpu_evaluator):
    """A candidate whose threads outnumber the cores waits for a CPU while timed, as any candidate does on a busy
    host. The verdict stands, and the result says its host-clocked times are not to be trusted. (Busy processes
    beside the worker would not show it: the worker runs in a session of its own, and the kernel's autogroup
    scheduling gives each session its share of the cores.)"""
    result = cpu_evaluator.evaluate(load_problem(FIXTURES / "transpose.py"), CANDIDATES / "transpose_threads.py")
    assert result.status is Status.OK, (result.reason, result.log_tail)
    assert all(c.t_candidate_ms for c in result.cases)
    assert any("waited for a CPU" in note for note in result.review), result.review
