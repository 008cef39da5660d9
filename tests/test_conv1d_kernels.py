"""The conv1d kernels of suites/ranking/conv1d_fp16 with their GPU launch blocks: the seed (seed_triton.py,
per-sequence tiles, shifted taps by pointer) and candidate_regshift.py (the taps x[l - 1] and x[l + 1] built in
registers from aligned runs of 8 positions).

test_suite_ranking.py runs the seed through the harness, where it takes its interpreter branch (one program per
sequence); the candidate runs through the harness here. Then each runs in a fresh process with the blocks it
launches on a GPU against a float64 reference: several length tiles per sequence (halo across tiles, runs
borrowed across tile edges), partial channel blocks, lengths that are not multiples of 8, both precisions.
"""

from __future__ import annotations

import pytest

from tests.suite_checks import SUITE, assert_each_run_ok, assert_interpreted_candidate_correct

SEED = SUITE / "conv1d_fp16" / "seed_triton.py"
REGSHIFT = SUITE / "conv1d_fp16" / "candidate_regshift.py"


def test_regshift_is_correct_in_the_harness(cpu_evaluator, tmp_path):
    assert_interpreted_candidate_correct(cpu_evaluator, tmp_path, "conv1d_fp16", REGSHIFT)


_GPU_BLOCKS_CHECK = """
module = load("conv1d_kernel", sys.argv[1])
for name in ("_INTERPRETER_BLOCK_CO", "_INTERPRETER_BLOCK_CI", "_INTERPRETER_BLOCK_L"):
    setattr(module, name, 1)  # keep the launch blocks as on a GPU
for name, value in zip(("BLOCK_CO", "BLOCK_CI", "BLOCK_L"), map(int, sys.argv[2:])):
    setattr(module, name, value)
torch.manual_seed(0)
# Lengths 136 and 72 (multiples of 8, not of 16): 2, 5, 3 and 1, 3, 2 length tiles at BLOCK_L 128, 32, 64 (the
# defaults, small, mid), the last one 8 positions long. 64 input channels: whole channel blocks of every BLOCK_CI
# (2-4 of them); 96 output channels a partial block of 64 and of 128, 128 whole ones.
for batch, cin, cout, length in [(3, 20, 40, 50), (2, 64, 96, 136), (2, 64, 128, 72), (1, 40, 24, 48), (1, 8, 8, 3)]:
    for dtype, tol in [(torch.float16, 1e-2), (torch.float32, 1e-3)]:
        model = module.ModelNew(cin, cout).to(dtype)
        x = (torch.randn(batch, cin, length) * 3).to(dtype)
        conv = model.conv
        want = torch.nn.functional.conv1d(x.double(), conv.weight.double(), conv.bias.double(), padding=1)
        got = model(x)
        assert got.dtype == dtype and got.shape == want.shape
        torch.testing.assert_close(got.double(), want, atol=tol, rtol=tol)
print("ok")
"""


# The runs share one process (suite_checks.run_interpreted_each): one Python, torch and Triton start, not one each.
BLOCKS = {"defaults": [], "small": ["64", "16", "32"], "mid": ["128", "32", "64"]}


@pytest.mark.parametrize("kernel", [SEED, REGSHIFT], ids=["seed", "regshift"])
def test_gpu_blocks_in_the_interpreter(kernel):
    assert_each_run_ok(_GPU_BLOCKS_CHECK, {name: [kernel, *blocks] for name, blocks in BLOCKS.items()})
