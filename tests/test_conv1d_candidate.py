"""The per-sequence tiled conv1d candidate (suites/ranking/conv1d_fp16/candidate_seq_tiled.py) on the cpu target.

As in test_suite_ranking.py (and with its small shape cases), the candidate goes through the real harness (kernel
policy on). On the cpu target the candidate takes its interpreter branch (one program per
sequence), so a second test runs it in a fresh process with its GPU launch blocks: several length tiles per sequence
(halo across tiles), partial channel blocks.
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from kernelevolve.eval.result import Status
from kernelevolve.operators.tune import find_tunables
from kernelevolve.problem.problem import load_problem
from tests.test_suite_ranking import SMALL_CASES, SUITE, small_problems  # noqa: F401 (a fixture)

CANDIDATE = SUITE / "conv1d_fp16" / "candidate_seq_tiled.py"
NAMES = ["conv1d_fp16", "conv1d_fp32"]


def test_candidate_tunables_are_launch_constants():
    tunables = find_tunables(CANDIDATE.read_text())
    assert set(tunables) == {"BLOCK_CO", "BLOCK_CI", "BLOCK_L", "NUM_WARPS", "NUM_STAGES"}
    for t in tunables.values():
        assert t.value in t.choices


@pytest.mark.parametrize("name", NAMES)
def test_candidate_is_correct_in_the_interpreter(cpu_evaluator, small_problems, name):  # noqa: F811
    problem = load_problem(small_problems[name])
    result = cpu_evaluator.evaluate(problem, CANDIDATE, trials=2, require_kernel=True)
    assert result.status is Status.OK, (result.reason, result.log_tail)
    assert result.languages == ["triton"] and result.interpreted
    assert len(result.cases) == len(SMALL_CASES[name]) and all(c.correct for c in result.cases)


# Run in a fresh process: Triton reads TRITON_INTERPRET when a kernel is decorated, and other tests in the same
# pytest process may already have loaded Triton's compiled (non-interpreted) path.
_GPU_BLOCKS_CHECK = """
import importlib.util, sys
import torch
spec = importlib.util.spec_from_file_location("conv1d_candidate_seq_tiled", sys.argv[1])
module = importlib.util.module_from_spec(spec)
spec.loader.exec_module(module)
for name in ("_INTERPRETER_BLOCK_CO", "_INTERPRETER_BLOCK_CI", "_INTERPRETER_BLOCK_L"):
    setattr(module, name, 1)  # keep the launch blocks as on a GPU
if len(sys.argv) > 2:
    for name, value in zip(("BLOCK_CO", "BLOCK_CI", "BLOCK_L"), map(int, sys.argv[2:])):
        setattr(module, name, value)
torch.manual_seed(0)
for batch, cin, cout, length in [(3, 20, 40, 50), (2, 96, 96, 200), (2, 64, 128, 100)]:
    for dtype, tol in [(torch.float16, 1e-2), (torch.float32, 1e-3)]:
        model = module.ModelNew(cin, cout).to(dtype)
        x = torch.randn(batch, cin, length).to(dtype)
        conv = model.conv
        want = torch.nn.functional.conv1d(x.double(), conv.weight.double(), conv.bias.double(), padding=1)
        got = model(x)
        assert got.dtype == dtype and got.shape == want.shape
        torch.testing.assert_close(got.double(), want, atol=tol, rtol=tol)
print("ok")
"""


@pytest.mark.parametrize("blocks", [[], ["64", "16", "32"]], ids=["defaults", "small_blocks"])
def test_candidate_gpu_blocks_in_the_interpreter(blocks):
    env = {**os.environ, "TRITON_INTERPRET": "1"}
    cmd = [sys.executable, "-c", _GPU_BLOCKS_CHECK, str(CANDIDATE), *blocks]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=300, env=env)
    assert p.returncode == 0 and "ok" in p.stdout, p.stderr[-3000:]
