"""The tune operator: finding, mutating and crossing tunable parameters."""

from __future__ import annotations

import random

import pytest

from kernelevolve.operators import tune
from kernelevolve.problem.problem import source_hash
from tests.conftest import CANDIDATES, EXAMPLES

SEED = (CANDIDATES / "transpose_cpp.py").read_text()


def test_declared_tunables_and_current_values():
    t = tune.find_tunables(SEED)
    assert list(t) == ["TILE"] and t["TILE"].value == 1 and t["TILE"].choices == (1, 2, 4, 8, 16, 32, 64, 128)


def test_mutation_moves_to_a_neighbour_and_changes_only_the_value():
    rng = random.Random(0)
    for _ in range(20):
        new, params = tune.mutate(SEED, rng, resample_p=0.0)
        assert params["TILE"] == 2  # the only neighbour of 1
        changed = [(a, b) for a, b in zip(SEED.splitlines(), new.splitlines()) if a != b]
        assert changed == [("TILE = 1", "TILE = 2")]
        assert source_hash(new) != source_hash(SEED)


def test_crossover_takes_each_value_from_a_parent():
    src = (EXAMPLES / "softmax" / "candidate_triton.py").read_text()
    a = tune.apply(src, {"BLOCK_ROWS": 1, "NUM_WARPS": 4})
    b = tune.apply(src, {"BLOCK_ROWS": 8, "NUM_WARPS": 32})
    seen = set()
    rng = random.Random(1)
    for _ in range(30):
        _, params = tune.crossover(a, b, rng)
        assert params["BLOCK_ROWS"] in (1, 8) and params["NUM_WARPS"] in (4, 32)
        seen.add((params["BLOCK_ROWS"], params["NUM_WARPS"]))
    assert len(seen) == 4
    with pytest.raises(tune.TuneError, match="same tunable"):
        tune.crossover(a, SEED, rng)


def test_tunables_inferred_from_triton_launches():
    src = (CANDIDATES / "relu_triton.py").read_text().replace('TUNABLES = {"BLOCK": [256, 512, 1024, 2048]}\n', "")
    src = src.replace("BLOCK=BLOCK)", "BLOCK=BLOCK, num_warps=4)")
    t = tune.find_tunables(src)
    assert t["BLOCK"].value == 1024 and 2048 in t["BLOCK"].choices and 512 in t["BLOCK"].choices
    assert t["num_warps"].value == 4 and 8 in t["num_warps"].choices
    new = tune.apply(src, {"num_warps": 8, "BLOCK": 512})
    assert "num_warps=8" in new and "BLOCK = 512" in new


def test_no_tunables_is_a_clear_error():
    with pytest.raises(tune.TuneError, match="no tunable parameters"):
        tune.mutate((CANDIDATES / "relu_ok.py").read_text(), random.Random(0))
    with pytest.raises(tune.TuneError, match="no module-level integer constant"):
        tune.find_tunables('TUNABLES = {"X": [1, 2]}\n')


@pytest.mark.parametrize("name", ["softmax", "rmsnorm"])
def test_the_shipped_cpp_examples_have_a_tunable_the_kernel_uses(name):
    """Issue 46 item 5: a search from either example's C++ candidate has something to tune: its OpenMP chunk."""
    source = (EXAMPLES / name / "candidate_cpp.py").read_text()
    assert tune.has_tunables(source) and "schedule(static, ROWS_PER_CHUNK)" in source
    assert "ROWS_PER_CHUNK = 4\n" in tune.apply(source, {"ROWS_PER_CHUNK": 4})
