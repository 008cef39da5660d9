"""The ranking-operator suite (suites/ranking): every problem loads, and every seed kernel is correct on the cpu
target through the real harness, with the kernel policy on (as on GPUs).

The suite's shapes are the paper's, far too large for Triton's interpreter on a small CPU, so each seed is
evaluated against a copy of its problem whose SHAPE_CASES are replaced by small cases (appended at the end of the
copied file). The small cases keep what the kernels branch on: sizes that are not powers of two, more than one
block or program where it matters, empty and one-element corners. Triton seeds run in the interpreter (correct,
untimed); C++ seeds are compiled (~25-35 s each the first time, cached per source afterwards) and timed.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from kernelevolve.operators.tune import find_tunables
from kernelevolve.problem.problem import exec_problem, load_problem, shape_cases
from kernelevolve.result import Status
from tests.suite_checks import SMALL_CASES, SUITE, small_case_problem

NAMES = sorted(SMALL_CASES)
CPP = sorted(n for n in NAMES if (SUITE / n / "seed_cpp.py").is_file())


@pytest.fixture(scope="module")
def small_problems(tmp_path_factory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("ranking_small")
    return {name: small_case_problem(root, name, cases) for name, cases in SMALL_CASES.items()}


def test_the_suite_is_complete():
    folders = sorted(p.name for p in SUITE.iterdir() if (p / "problem.py").is_file())
    assert folders == NAMES
    assert all((SUITE / n / "seed_triton.py").is_file() for n in NAMES)
    assert len(CPP) >= 4
    assert (SUITE / "README.md").is_file()


@pytest.mark.parametrize("name", NAMES)
def test_problem_loads(name):
    problem = load_problem(SUITE / name / "problem.py")
    assert problem.name == name
    # Executed as the worker does (torch imported, nothing built): the cases name real constants, and the paper's
    # ranges come with at least one more case (out of distribution).
    cases = shape_cases(exec_problem(problem.path))
    assert len(cases) >= 3


@pytest.mark.parametrize("seed", [f"{n}/seed_triton.py" for n in NAMES] + [f"{n}/seed_cpp.py" for n in CPP])
def test_seed_tunables_are_launch_constants(seed):
    source = (SUITE / seed).read_text()
    tunables = find_tunables(source)  # raises when TUNABLES names something that is not an int constant
    declared = next(
        ast.literal_eval(node.value)
        for node in ast.parse(source).body
        if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == "TUNABLES" for t in node.targets)
    )
    assert tunables and set(tunables) == set(declared)
    for name, t in tunables.items():
        assert t.value in declared[name], f"{name}'s default {t.value} is not among its TUNABLES choices"


@pytest.mark.parametrize("name", NAMES)
def test_triton_seed_is_correct_in_the_interpreter(cpu_evaluator, small_problems, name):
    problem = load_problem(small_problems[name])
    result = cpu_evaluator.evaluate(problem, SUITE / name / "seed_triton.py", trials=2, require_kernel=True)
    assert result.status is Status.OK, (result.reason, result.log_tail)
    assert result.languages == ["triton"] and result.interpreted
    assert len(result.cases) == len(SMALL_CASES[name]) and all(c.correct for c in result.cases)


@pytest.mark.parametrize("name", CPP)
def test_cpp_seed_is_correct_and_timed(cpu_evaluator, small_problems, name):
    problem = load_problem(small_problems[name])
    result = cpu_evaluator.evaluate(problem, SUITE / name / "seed_cpp.py", trials=2, require_kernel=True)
    assert result.status is Status.OK, (result.reason, result.log_tail)
    assert result.languages == ["cpp"] and not result.interpreted
    assert all(c.correct and c.timing.candidate.median_ms and c.timing.candidate.median_ms > 0 for c in result.cases)
