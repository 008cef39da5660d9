"""The wukong_fm seed (suites/ranking/wukong_fm/seed_triton.py, a persistent batched kernel) with GPU launch blocks.

test_suite_ranking.py runs the seed through the harness, where it takes its interpreter branch (wide column blocks,
two programs). Here it runs in a fresh process with its GPU launch blocks, against float64 with the reference's fp16
rounding of X^T Y: N as one padded block (16, 24) and as two blocks (40 = 32 + 16, 70 = 64 + 16), D in one chunk
(64) and in three (96), column counts that are not a multiple of the block, more items than programs and not a
multiple of them, and the tall kernel (N > 128) with a partial last row block.
"""

from __future__ import annotations

from tests.suite_checks import SUITE, assert_each_run_ok

SEED = SUITE / "wukong_fm" / "seed_triton.py"


_GPU_BLOCKS_CHECK = """
module = load("wukong_fm_seed", sys.argv[1])
module._INTERPRETER_BLOCK_K = 1  # keep the launch blocks as on a GPU
module._INTERPRETER_PROGRAMS = 3  # a persistent grid of 3 programs: most shapes give them unequal item counts
for name, value in zip(("BLOCK_K", "MAX_BLOCK_D", "TALL_BLOCK_N", "TALL_BLOCK_K"), map(int, sys.argv[2:])):
    setattr(module, name, value)
torch.manual_seed(0)
# (batch, N, D, K)
for batch, n, d, k in [(5, 24, 64, 200), (3, 16, 96, 130), (4, 40, 96, 72), (2, 64, 64, 300), (3, 70, 96, 40),
                       (2, 136, 96, 100)]:  # 136 rows: 2 + 1 (8 rows) row blocks of 64, 4 + 1 of 32
    x = torch.randn(batch, n, d).half()
    y = torch.randn(batch, n, k).half()
    t = torch.bmm(x.double().transpose(1, 2), y.double()).half().double()  # X^T Y rounded to fp16, as PyTorch's
    want = torch.bmm(x.double(), t)
    got = module.ModelNew()(x, y)
    assert got.dtype == torch.float16 and got.shape == want.shape, (got.dtype, got.shape)
    # fp16 output rounding (rtol), and one-ulp flips of the rounded X^T Y (accumulated in another order) (atol)
    torch.testing.assert_close(got.double(), want, atol=0.1, rtol=2e-3, msg=f"{(batch, n, d, k)}")
print("ok")
"""


RUNS = {"defaults": [SEED], "small_blocks": [SEED, "64", "32", "32", "64"]}
# The runs share one process (suite_checks.run_interpreted_each): one Python, torch and Triton start, not one each.


def test_seed_gpu_blocks_in_the_interpreter():
    assert_each_run_ok(_GPU_BLOCKS_CHECK, RUNS)
