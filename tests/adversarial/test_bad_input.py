"""Bad input the harness meets: inputs nested in lists and dicts (handled leaf by leaf, so an honest kernel is
accepted and a write to a nested input caught), a forward that returns None, and a candidate that is not Python
source at all (binary garbage: a compile error that says so, not a crashed worker)."""

from __future__ import annotations

from pathlib import Path

import pytest

from kernelevolve.problem.problem import ProblemError, load_problem
from kernelevolve.result import Status
from tests.conftest import FIXTURES

HERE = Path(__file__).resolve().parent
NESTED = HERE / "problems" / "nested_inputs.py"
CASES = [
    ("nested_honest.py", NESTED, Status.OK, ""),
    ("nested_mutates.py", NESTED, Status.INCORRECT, "inputs check: input 2 was modified"),
    ("returns_none.py", FIXTURES / "kb_relu.py", Status.INCORRECT, "forward returned None where the reference"),
    (
        "returns_none_for_two.py",
        HERE / "problems" / "two_outputs.py",
        Status.INCORRECT,
        "forward returned None where the reference returns a tuple of 2 values: did it miss a `return`?",
    ),
]


@pytest.mark.parametrize(("candidate", "problem", "status", "why"), CASES, ids=[c[0] for c in CASES])
def test_bad_input_gets_its_verdict(cpu_evaluator, candidate, problem, status, why):
    result = cpu_evaluator.evaluate(load_problem(problem), HERE / "bad_input" / candidate, trials=1, budget_s=0.05)
    assert result.status is status, (result.reason, result.log_tail[-1500:])
    assert why in result.reason


def test_get_inputs_returning_a_dict_is_a_problem_error_that_says_what_to_return(cpu_evaluator):
    with pytest.raises(ProblemError, match=r"get_inputs\(\) returned a dict: it must return a list of forward's"):
        cpu_evaluator.evaluate(load_problem(HERE / "problems" / "dict_inputs.py"), FIXTURES / "kb_relu.py", trials=1)


def test_a_binary_candidate_is_a_compile_error_that_says_why(cpu_evaluator, tmp_path):
    garbage = tmp_path / "garbage.py"
    garbage.write_bytes(b"\x89PNG\r\n\x1a\n\x00\xff\xfe not python")
    result = cpu_evaluator.evaluate(load_problem(FIXTURES / "kb_relu.py"), garbage, trials=1)
    assert result.status is Status.COMPILE_ERROR
    assert result.reason == (
        "the candidate is not UTF-8 text (byte 0x89 at offset 0): a kernel file must be Python source"
    )
