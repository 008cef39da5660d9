"""The rmsnorm2d_bwd persistent candidate (suites/ranking/rmsnorm2d_bwd/candidate_persistent.py): a fixed number of
programs striding over row blocks with the next block's loads carried across the loop, and a column-parallel dw
reduction.

Through the real harness on the suite's small cases (the wide one narrower: HARNESS_CASES), and in a fresh process
at GPU-sized row blocks against the PyTorch reference Model: one row, fewer rows than one block, a partial last
block, more blocks than programs (so a program strides, and its last prefetch falls past the end), more programs
than blocks; columns a power of two and not, fewer than one reduction block and several; two calls giving the same
bits.
"""

from __future__ import annotations

from kernelevolve.problem.problem import exec_problem, tolerance
from tests.suite_checks import SMALL_CASES, SUITE, assert_each_run_ok, assert_interpreted_candidate_correct

PROBLEM = SUITE / "rmsnorm2d_bwd" / "problem.py"
CANDIDATE = SUITE / "rmsnorm2d_bwd" / "candidate_persistent.py"

# The suite's small cases, the few wide rows (3 x 5000) at 1000 columns: in the interpreter the dw reduction takes
# one program per 8 columns (625 at 5000, and the harness calls forward three times per case), and the case is the
# same at 1000: its 3 rows in one partial row block of one program, columns not a power of two.
HARNESS_CASES = [{**case, "COLS": min(case["COLS"], 1000)} for case in SMALL_CASES["rmsnorm2d_bwd"]]


def test_candidate_is_correct_in_the_harness(cpu_evaluator, tmp_path):
    assert_interpreted_candidate_correct(cpu_evaluator, tmp_path, "rmsnorm2d_bwd", CANDIDATE, HARNESS_CASES)


_GPU_BLOCKS_CHECK = """
problem = load("rmsnorm2d_bwd_problem", sys.argv[1])
module = load("rmsnorm2d_bwd_persistent", sys.argv[2])
atol, rtol = float(sys.argv[3]), float(sys.argv[4])
module._INTERPRETER_TILE = 0  # row blocks of TILE elements, as on a GPU
for name, value in zip(("TILE", "_INTERPRETER_PROGRAMS", "MAX_BLOCK_P", "BLOCK_C"), map(int, sys.argv[5:])):
    setattr(module, name, value)
torch.manual_seed(0)
ref, new = problem.Model(), module.ModelNew()
for rows, cols in [(1, 96), (5, 128), (37, 96), (100, 256), (20, 600), (9, 2056)]:
    x, w, dy = torch.randn(rows, cols), torch.randn(cols), torch.randn(rows, cols)
    want = ref(x, w, dy)
    first = new(x, w, dy)
    for name, got, exp in zip(("dx", "dw"), first, want):
        assert got.shape == exp.shape and got.dtype == exp.dtype, (rows, cols, name, got.shape)
        torch.testing.assert_close(got, exp, atol=atol, rtol=rtol, msg=f"rows {rows}, cols {cols}: {name}")
    again = new(x, w, dy)
    assert all(torch.equal(a, b) for a, b in zip(first, again)), f"rows {rows}, cols {cols}: not deterministic"
print("ok")
"""


# (TILE, programs, MAX_BLOCK_P, BLOCK_C). Defaults (2048, 3, 512, 8): 8-16 rows per block at 96-256 columns, 2 at
# 600, 1 at 2056 (a 4096-wide row block), so 100 rows give 13 blocks over 3 programs, 20 rows 10 and 9 rows 9.
# (512, 7, 2, 16): 2-4 rows per block (one at 600 and 2056 columns), 7 programs striding over up to 50 blocks,
# partials summed two at a time over column blocks of 16. (8192, 64, 16, 128): blocks of up to 64 rows, more
# programs than blocks everywhere. 600 and 2056 columns: column blocks of 8 whole, of 16 and 128 a partial last one.
BLOCKS = {
    "defaults": [],
    "tile512_programs7": ["512", "7", "2", "16"],
    "tile8192_programs64": ["8192", "64", "16", "128"],
}
# The runs share one process (suite_checks.run_interpreted_each): one Python, torch and Triton start, not one each.


def test_gpu_blocks_in_the_interpreter():
    atol, rtol = tolerance(exec_problem(PROBLEM), "float32")
    runs = {name: [PROBLEM, CANDIDATE, atol, rtol, *blocks] for name, blocks in BLOCKS.items()}
    assert_each_run_ok(_GPU_BLOCKS_CHECK, runs)
