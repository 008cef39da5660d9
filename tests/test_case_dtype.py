"""A case that binds DTYPE runs in that dtype, and one that binds DEVICE_TYPES runs only there (docs/cli.md,
"Problems and candidates"): the ATen suite's half-precision check cases (docs/aten.md) on the cpu target."""

from __future__ import annotations

from pathlib import Path

import pytest

from kernelevolve.problem.problem import ProblemError, check_cases, exec_problem, load_problem
from kernelevolve.result import Status

PROBLEM = """
import torch
import torch.nn as nn

N = 64
DTYPE = torch.float32
DEVICE_TYPES = None
SHAPE_CASES = [{"N": 64}]
CHECK_CASES = [{"N": 32, "DTYPE": "bfloat16"}, {"N": 16, "DTYPE": "float16", "DEVICE_TYPES": ["cuda"]}]


class Model(nn.Module):
    def forward(self, x):
        return torch.tanh(x)


def get_inputs():
    return [torch.randn(N)]


def get_init_inputs():
    return []
"""

CANDIDATE = """
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, x):
        return {body}
"""


@pytest.fixture
def problem(tmp_path: Path):
    path = tmp_path / "tanh.py"
    path.write_text(PROBLEM)
    return load_problem(path)


def _candidate(tmp_path: Path, body: str) -> Path:
    path = tmp_path / "candidate.py"
    path.write_text(CANDIDATE.format(body=body))
    return path


def test_device_types_select_check_cases(problem):
    module = exec_problem(problem.path)
    assert len(check_cases(module)) == 2 and len(check_cases(module, "cuda")) == 2
    assert check_cases(module, "cpu") == [{"N": 32, "DTYPE": "bfloat16"}]
    module.CHECK_CASES = [{"N": 8, "DEVICE_TYPES": "cuda"}]
    with pytest.raises(ProblemError, match="DEVICE_TYPES must be None or a list"):
        check_cases(module, "cpu")


def test_a_case_runs_in_the_dtype_it_binds(cpu_evaluator, problem, tmp_path):
    good = cpu_evaluator.evaluate(problem, _candidate(tmp_path, "torch.tanh(x)"), trials=1, timed=False)
    assert good.status is Status.OK, good.reason
    assert len(good.cases) == 2  # the float16 case is for GPUs only
    # float32 math returned in float32: right on the float32 case, the wrong dtype on the bfloat16 one
    wrong = cpu_evaluator.evaluate(problem, _candidate(tmp_path, "torch.tanh(x.float())"), trials=1, timed=False)
    assert wrong.status is Status.INCORRECT
    assert wrong.cases[0].correct and not wrong.cases[1].correct
    assert "bfloat16" in wrong.reason
