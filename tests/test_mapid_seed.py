"""The mapid seed (suites/ranking/mapid/seed_triton.py, a k-ary lower_bound) with GPU launch blocks.

test_suite_ranking.py runs the seed through the harness, where it takes its interpreter branch (one program for
up to 64k ids). Here it runs in a fresh process with GPU launch blocks and several fanouts against the reference
Model, on edge cases: tables of 1, 2, 3, 17, 300 and 100k entries; ids below the first entry, above the last, equal to
every entry, negative and above max_raw_id; evicted slots; id counts that BLOCK does not divide.
"""

from __future__ import annotations

from tests.suite_checks import SUITE, assert_each_run_ok

SEED = SUITE / "mapid" / "seed_triton.py"


_EDGE_CASES_CHECK = """
module = load("mapid_seed", sys.argv[1])
problem = load("mapid_problem", sys.argv[2])
module._INTERPRETER_BLOCK = 1  # keep the launch block as on a GPU
if len(sys.argv) > 3:
    module.BLOCK, module.FANOUT = int(sys.argv[3]), int(sys.argv[4])
BLOCK = module.BLOCK
MAX = (1 << 40) - 1
torch.manual_seed(0)


def table_of(size, low, high):
    # Strictly ascending, drawn from [low, high].
    values = torch.unique(torch.randint(low, high + 1, (4 * size + 8,), dtype=torch.int64))
    values = values[torch.randperm(values.numel())[:size]].sort().values
    assert values.numel() == size
    return values


def queries(table, max_raw_id, n, every_entry):
    # every_entry: each entry of the table queried (and its neighbours), else n entries drawn at random.
    first, last = int(table[0]), int(table[-1])
    sample = table if every_entry else table[torch.randint(0, table.numel(), (n,))]
    edge = [first, last, first - 1, last + 1, 0, 1, max_raw_id, max_raw_id - 1, max_raw_id + 1, -1, -(1 << 62),
            (1 << 63) - 1, -(1 << 63)]
    parts = [sample, sample - 1, sample + 1, torch.tensor(edge, dtype=torch.int64),
             torch.randint(-(1 << 41), 1 << 41, (n,), dtype=torch.int64),
             torch.randint(0, max_raw_id + 1, (n,), dtype=torch.int64)]
    ids = torch.cat(parts)
    return ids[torch.randperm(ids.numel())]


checked = 0
for size in (1, 2, 3, 17, 300, 100_000):  # 300: several levels at every fanout, each entry queried
    for max_raw_id, low, high in [
        (MAX, 10, MAX - 10),  # ids below the first entry and above the last exist
        (MAX, 0, MAX),  # the clamp lands on the table's ends when they are 0 and max_raw_id
        (5 * size + 40, 3, 4 * size + 20),  # a dense range: random ids often hit
    ]:
        table = table_of(size, low, high)
        if low == 0:
            table[0], table[-1] = 0, max_raw_id
            table = torch.unique(table)
        remap = torch.randperm(table.numel(), dtype=torch.int64)
        remap[torch.rand(table.numel()) < 0.2] = -1
        remap[0] = -1  # an evicted first slot
        # BLOCK does not divide the id count (one id dropped where it would). The first call queries every entry
        # (up to 300); the second takes several programs (its 2n random ids alone fill more than a block) and
        # queries every entry of the small tables, n random entries of the others (a 300-entry table's every entry
        # was queried by the first call, on the same table and remap).
        for n, default_id, every_entry in [(1, -7, size <= 2000), (BLOCK // 2 + 3, table.numel(), size <= 17)]:
            ids = queries(table, max_raw_id, n, every_entry)
            ids = ids[: ids.numel() - (ids.numel() % BLOCK == 0)]
            assert n == 1 or ids.numel() > BLOCK
            want = problem.Model(max_raw_id, default_id)(ids, table, remap)
            got = module.ModelNew(max_raw_id, default_id)(ids, table, remap)
            assert got.dtype == torch.int64 and got.shape == want.shape
            assert torch.equal(got, want), (size, max_raw_id, n, default_id, (got != want).nonzero()[:5])
            checked += 1
        ids = torch.tensor([5], dtype=torch.int64)[:0]  # no ids
        assert module.ModelNew(max_raw_id, 0)(ids, table, remap).numel() == 0
assert checked == 6 * 3 * 2
print("ok", checked)
"""


BLOCKS = {"defaults": [], "fanout16": ["32", "16"], "fanout32": ["64", "32"], "fanout8": ["128", "8"]}
RUNS = {name: [SEED, SUITE / "mapid" / "problem.py", *blocks] for name, blocks in BLOCKS.items()}
# The runs share one process (suite_checks.run_interpreted_each): one Python, torch and Triton start, not one each.


def test_seed_edge_cases_in_the_interpreter():
    assert_each_run_ok(_EDGE_CASES_CHECK, RUNS)
