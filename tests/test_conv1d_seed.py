"""The conv1d seed (suites/ranking/conv1d_fp16/seed_triton.py, per-sequence tiles) with its GPU launch blocks.

test_suite_ranking.py runs the seed through the harness, where it takes its interpreter branch (one program per
sequence). Here it runs in a fresh process with the blocks it launches on a GPU: several length tiles per
sequence (halo across tiles), partial channel blocks.
"""

from __future__ import annotations

import pytest

from tests.suite_checks import SUITE, run_interpreted

SEED = SUITE / "conv1d_fp16" / "seed_triton.py"


_GPU_BLOCKS_CHECK = """
module = load("conv1d_seed", sys.argv[1])
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
def test_seed_gpu_blocks_in_the_interpreter(blocks):
    run_interpreted(_GPU_BLOCKS_CHECK, SEED, *blocks)
