"""The interformer_pffn split-K candidate (suites/ranking/interformer_pffn/candidate_splitk.py): the hidden dimension
split across programs, the partials reduced in the same launch by the last program of each row block.

Through the real harness on the suite's small cases (the first takes the split-K path, the second, D = 300, the
seed's), and in a fresh process with its GPU launch blocks against the PyTorch reference Model: one row, a partial
row block, several row blocks and a partial last one; D and K powers of two and not; SPLIT_K dividing the number
of K blocks, not dividing it, and cut to it; two calls in a row on one cached counter (it must be back at 0 after
every launch, and the second call must give the first one's bits).
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from kernelevolve.eval.result import Status
from kernelevolve.problem.problem import exec_problem, load_problem, tolerance
from tests.test_suite_ranking import SMALL_CASES, SUITE

PROBLEM = SUITE / "interformer_pffn" / "problem.py"
CANDIDATE = SUITE / "interformer_pffn" / "candidate_splitk.py"


def test_candidate_is_correct_in_the_harness(cpu_evaluator, tmp_path):
    cases = SMALL_CASES["interformer_pffn"]
    path = tmp_path / "interformer_pffn" / "problem.py"
    path.parent.mkdir()
    path.write_text(f"{PROBLEM.read_text()}\n\n# Small cases for the CPU test.\nSHAPE_CASES = {cases!r}\n")
    result = cpu_evaluator.evaluate(load_problem(path), CANDIDATE, trials=2, require_kernel=True)
    assert result.status is Status.OK, (result.reason, result.log_tail)
    assert result.languages == ["triton"] and result.interpreted
    assert len(result.cases) == len(cases) and all(c.correct for c in result.cases)


# Run in a fresh process: Triton reads TRITON_INTERPRET when a kernel is decorated, and other tests in the same
# pytest process may already have loaded Triton's compiled (non-interpreted) path.
_GPU_BLOCKS_CHECK = """
import importlib.util, sys
import torch
def load(name, path):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
problem = load("interformer_pffn_problem", sys.argv[1])
module = load("interformer_pffn_splitk", sys.argv[2])
atol, rtol = float(sys.argv[3]), float(sys.argv[4])
module._INTERPRETER_BLOCK_M = 1  # keep the launch blocks as on a GPU
for name, value in zip(("BLOCK_M", "BLOCK_K", "SPLIT_K"), map(int, sys.argv[5:])):
    setattr(module, name, value)
torch.manual_seed(0)
for d, k in [(128, 256), (96, 96), (160, 192)]:
    ref = problem.Model(d, k).half()
    new = module.ModelNew(d, k).half()
    new.load_state_dict(ref.state_dict())
    for rows in (1, 7, 256, 300):
        x = torch.randn(rows, d).half()
        want = ref(x)
        outs = []
        for call in range(2):  # two calls on one cached counter
            got = new(x)
            where = f"rows {rows}, D {d}, K {k}, call {call}"
            assert got.dtype == torch.float16 and got.shape == want.shape, (where, got.dtype, got.shape)
            torch.testing.assert_close(got, want, atol=atol, rtol=rtol, msg=where)
            ((shape, _, _, count),) = module._SCRATCH.values()  # the split-K path ran, on one cached set
            assert not count.any(), (where, count)  # every row block's last program put its counter back
            outs.append(got)
        assert torch.equal(outs[0], outs[1]), f"rows {rows}, D {d}, K {k}: not deterministic"
print("ok")
"""


# (BLOCK_M, BLOCK_K, SPLIT_K), and the K blocks at K = 256 / 96 / 192. Defaults (32, 32, 8): 8 / 3 / 6, SPLIT_K
# divides 8 and is cut to 3 and 6. (16, 64, 3): 4 / 2 / 3, 3 does not divide 4 (blocks 0 and 3, 1, 2), cut to 2 at
# K = 96 (its second block half masked); 19 row blocks at 300 rows. (32, 16, 5): 16 / 6 / 12, 5 divides none.
@pytest.mark.parametrize(
    "blocks",
    [[], ["16", "64", "3"], ["32", "16", "5"]],
    ids=["defaults", "m16_k64_split3", "k16_split5"],
)
def test_split_k_gpu_blocks_in_the_interpreter(blocks):
    atol, rtol = tolerance(exec_problem(PROBLEM), "float16")
    env = {**os.environ, "TRITON_INTERPRET": "1"}
    cmd = [sys.executable, "-c", _GPU_BLOCKS_CHECK, str(PROBLEM), str(CANDIDATE), str(atol), str(rtol), *blocks]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=300, env=env)
    assert p.returncode == 0 and "ok" in p.stdout, p.stderr[-3000:]
