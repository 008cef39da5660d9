"""The interformer_pffn split-K candidate (suites/ranking/interformer_pffn/candidate_splitk.py): the hidden dimension
split across programs, the partials reduced in the same launch by the last program of each row block.

Through the real harness on the suite's small cases (the first takes the split-K path, the second, D = 300, the
seed's), and in a fresh process with its GPU launch blocks against the PyTorch reference Model: one row, a partial
row block, several row blocks and a partial last one; D and K powers of two and not; SPLIT_K dividing the number
of K blocks, not dividing it, and cut to it; a call on the counter an earlier call left, and at several row blocks
two calls in a row on one cached counter (it must be back at 0 after every launch, and the second call must give
the first one's bits).
"""

from __future__ import annotations

from kernelevolve.problem.problem import exec_problem, tolerance
from tests.suite_checks import SUITE, assert_each_run_ok, assert_interpreted_candidate_correct

PROBLEM = SUITE / "interformer_pffn" / "problem.py"
CANDIDATE = SUITE / "interformer_pffn" / "candidate_splitk.py"


def test_candidate_is_correct_in_the_harness(cpu_evaluator, tmp_path):
    assert_interpreted_candidate_correct(cpu_evaluator, tmp_path, "interformer_pffn", CANDIDATE)


_GPU_BLOCKS_CHECK = """
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
    for rows in (1, 7, 32, 40):  # one row; a partial block; whole blocks (16, 32); several and a partial last
        x = torch.randn(rows, d).half()
        want = ref(x)
        outs = []
        # Two calls on one cached counter at 40 rows (several row blocks, a partial last). 7 rows has the blocks of
        # 1 row: its call runs on the counter the call at 1 row left (the same cached set, asserted below).
        for call in range(2 if rows == 40 else 1):
            got = new(x)
            where = f"rows {rows}, D {d}, K {k}, call {call}"
            assert got.dtype == torch.float16 and got.shape == want.shape, (where, got.dtype, got.shape)
            torch.testing.assert_close(got, want, atol=atol, rtol=rtol, msg=where)
            ((shape, _, _, count),) = module._SCRATCH.values()  # the split-K path ran, on one cached set
            assert not count.any(), (where, count)  # every row block's last program put its counter back
            if rows == 1:
                one_row_count = count
            elif rows == 7:
                assert count is one_row_count, where
            outs.append(got)
        if len(outs) == 2:
            assert torch.equal(outs[0], outs[1]), f"rows {rows}, D {d}, K {k}: not deterministic"
print("ok")
"""


# (BLOCK_M, BLOCK_K, SPLIT_K), and the K blocks at K = 256 / 96 / 192. Defaults (16, 64, 8): 4 / 2 / 3, SPLIT_K
# cut to each. (32, 32, 8): 8 / 3 / 6, SPLIT_K divides 8 and is cut to 3 and 6. (16, 64, 3): 4 / 2 / 3, 3 does not
# divide 4 (blocks 0 and 3, 1, 2), cut to 2 at K = 96 (its second block half masked); 3 row blocks at 40 rows.
# (32, 16, 5): 16 / 6 / 12, 5 divides none.
BLOCKS = {
    "defaults": [],
    "m32_k32_split8": ["32", "32", "8"],
    "m16_k64_split3": ["16", "64", "3"],
    "k16_split5": ["32", "16", "5"],
}
# The runs share one process (suite_checks.run_interpreted_each): one Python, torch and Triton start, not one each.


def test_split_k_gpu_blocks_in_the_interpreter():
    atol, rtol = tolerance(exec_problem(PROBLEM), "float16")
    runs = {name: [PROBLEM, CANDIDATE, atol, rtol, *blocks] for name, blocks in BLOCKS.items()}
    assert_each_run_ok(_GPU_BLOCKS_CHECK, runs)
