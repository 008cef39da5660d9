"""The shipped examples on the cpu target: Triton through the interpreter (correct, untimed), C++
compiled and timed for real, the deliberately wrong candidates rejected as incorrect.

The examples' own shapes (4096 x 4096 first) take 30-50 s per evaluation on a small CPU, so each candidate is
evaluated against a copy of its problem whose SHAPE_CASES are small (appended at the end of the copied file). The
small cases keep what the kernels and the wrong candidates branch on: a power-of-two width and two that are not
(candidate_wrong for rmsnorm is exact at a power of two only), row counts that are not powers of two, and a case
with more rows than one interpreter tile holds (256 rows of 4096 padded columns), so the Triton kernels run
several programs with a partial last one. test_check_problem.py checks the problems at their shipped shapes."""

from __future__ import annotations

import pytest

from kernelevolve.eval.worker import hostload
from kernelevolve.problem.problem import load_problem
from kernelevolve.result import Status
from tests.conftest import CANDIDATES, EXAMPLES, FIXTURES

NAMES = ["softmax", "rmsnorm"]
SMALL_CASES = {
    "softmax": [{"BATCH": 300, "DIM": 3000}, {"BATCH": 64, "DIM": 1024}, {"BATCH": 33, "DIM": 1000}],
    "rmsnorm": [{"ROWS": 300, "HIDDEN": 3000}, {"ROWS": 64, "HIDDEN": 1024}, {"ROWS": 33, "HIDDEN": 1536}],
}


@pytest.fixture(scope="module")
def small_examples(tmp_path_factory) -> dict:
    """Each example's problem with SHAPE_CASES replaced by SMALL_CASES, loaded."""
    root = tmp_path_factory.mktemp("examples_small")
    problems = {}
    for name, cases in SMALL_CASES.items():
        path = root / name / "problem.py"
        path.parent.mkdir()
        source = (EXAMPLES / name / "problem.py").read_text()
        path.write_text(f"{source}\n\n# Small cases for the CPU test.\nSHAPE_CASES = {cases!r}\n")
        problems[name] = load_problem(path)
    return problems


def test_the_small_cases_replace_the_shipped_ones(small_examples):
    from kernelevolve.problem.problem import exec_problem, shape_cases

    for name, cases in SMALL_CASES.items():
        assert shape_cases(exec_problem(small_examples[name].path)) == cases


@pytest.mark.parametrize("name", NAMES)
def test_triton_candidate_is_correct_in_the_interpreter(cpu_evaluator, small_examples, name):
    problem = small_examples[name]
    result = cpu_evaluator.evaluate(problem, EXAMPLES / name / "candidate_triton.py")
    assert result.status is Status.OK, (result.reason, result.log_tail)
    assert result.interpreted and result.languages == ["triton"]
    assert result.speedup is None and all(c.timing.candidate.median_ms is None for c in result.cases)
    assert len(result.cases) >= 2 and all(c.correct for c in result.cases)


@pytest.mark.parametrize("name", NAMES)
def test_cpp_candidate_is_correct_and_timed(cpu_evaluator, small_examples, name):
    """With the kernel policy on (the cpu default is off): these are also the adversarial suite's honest C++
    kernels, so that each C++ build (about a minute on CI's machine) serves both."""
    problem = small_examples[name]
    result = cpu_evaluator.evaluate(problem, EXAMPLES / name / "candidate_cpp.py", require_kernel=True)
    assert result.status is Status.OK, (result.reason, result.log_tail)
    assert result.languages == ["cpp"] and not result.interpreted
    honest_checks = {"uninitialised_memory", "structure", "aliasing", "order", "determinism", "threads", "integrity"}
    assert honest_checks | {"kernel_policy", "kernel_launch", "timing_outputs"} <= set(result.checks), result.checks
    assert result.speedup and result.speedup > 0 and result.fitness == result.speedup
    for case in result.cases:
        assert (
            case.timing.candidate.median_ms > 0
            and case.timing.eager.median_ms > 0
            and case.timing.candidate.iqr_ms is not None
        )


@pytest.mark.parametrize("name", NAMES)
def test_wrong_candidate_is_incorrect(cpu_evaluator, small_examples, name):
    problem = small_examples[name]
    result = cpu_evaluator.evaluate(problem, EXAMPLES / name / "candidate_wrong.py")
    assert result.status is Status.INCORRECT, result.reason
    assert result.fitness == 0 and result.reason
    assert any(not c.correct and c.accuracy.max_abs_err for c in result.cases)


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
    assert all(c.timing.candidate.median_ms for c in result.cases)
    assert any("waited for a CPU" in note for note in result.review), result.review
