"""BackendBench's scores (kernelevolve/suites/scores.py) on a fixture of three operators, worked by hand."""

from __future__ import annotations

import math

import pytest

from kernelevolve.result import CaseResult, EvalResult, Status
from kernelevolve.suites import scores
from kernelevolve.suites.bench import BenchRow, markdown, row_from


def _case(correct: bool, eager: float, best: float | None = None) -> dict:
    return {"correct": correct, "speedup_eager": eager, "speedup_best": best if best is not None else eager}


# add: correct, 2.0x and 0.5x over eager (geomean 1.0), 1.0x and 0.25x over the faster of eager and torch.compile;
# relu: correct on both cases, 4x over eager (2x over the faster); mul: wrong on one of its two cases.
ROWS = [
    BenchRow("add", "ok", True, 1.0, cases=[_case(True, 2.0, 1.0), _case(True, 0.5, 0.25)], speedup_best=0.5),
    BenchRow("relu", "ok", True, 4.0, cases=[_case(True, 4.0, 2.0), _case(True, 4.0, 2.0)], speedup_best=2.0),
    BenchRow("mul", "incorrect", False, None, cases=[_case(True, 3.0), _case(False, 9.0)]),
    BenchRow("div", "error", False, reason="the problem failed to load"),
]


def test_correctness_is_each_operator_s_share_of_samples_passed():
    assert [scores.correctness(r) for r in ROWS] == [1.0, 1.0, 0.5, 0.0]


def test_the_geomean_counts_an_operator_without_a_correct_kernel_as_one():
    assert scores.geomean_speedup(ROWS) == pytest.approx((1.0 * 4.0 * 1.0 * 1.0) ** 0.25)
    assert scores.geomean_speedup(ROWS, "speedup_best") == pytest.approx((0.5 * 2.0) ** 0.25)
    assert scores.geomean_speedup([]) is None


def test_perf_at_p_is_the_share_of_all_samples_correct_and_faster_than_p():
    # 7 samples: add's two, relu's two, mul's two, div's one failed before any case
    assert scores.perf_at(ROWS, 1.0) == pytest.approx(4 / 7)  # add 2.0, relu 4.0 x2, mul's correct 3.0
    assert scores.perf_at(ROWS, 3.0) == pytest.approx(2 / 7)  # mul's 9.0 is wrong, 3.0 is not above 3
    assert scores.perf_at(ROWS, 1.0, "speedup_best") == pytest.approx(3 / 7)  # add's 1.0 is not above 1


def test_the_pass_rate_is_the_share_of_operators_with_a_correct_kernel():
    assert scores.pass_rate(ROWS) == 0.5 and scores.pass_rate([]) == 0.0


def test_a_row_s_best_baseline_is_the_faster_of_eager_and_a_correct_torch_compile_per_case():
    cases = [
        CaseResult(shape={"N": 1}, correct=True, t_candidate_ms=1.0, t_eager_ms=4.0, t_compile_ms=2.0, speedup=4.0),
        CaseResult(shape={"N": 2}, correct=True, t_candidate_ms=1.0, t_eager_ms=3.0, t_compile_ms=0.5, speedup=3.0,
                   compile_baseline_correct=False),
    ]  # fmt: skip
    row = row_from("op", EvalResult(status=Status.OK, correct=True, cases=cases).finalize())
    assert [c["speedup_best"] for c in row.cases] == [2.0, 3.0]  # a wrong torch.compile is no baseline
    assert row.speedup_best == pytest.approx(math.sqrt(6.0))


def test_the_table_states_its_baselines_and_carries_the_scores():
    text = markdown(ROWS, "# fixture")
    assert "Baselines: a speedup is the baseline's time over the kernel's" in text
    assert "vs the faster of the two" in text and "| add | ok | 1.00x | - | 0.50x |" in text
    assert "pass rate 0.50 (2 of 4 operators with a correct kernel)" in text
    assert "| eager | 1.41x | 0.57 |" in text
    assert "mul 0.50" in text


def test_check_only_cases_count_for_correctness_and_not_for_speed():
    """A problem's CHECK_CASES (OpInfo samples, never timed) are samples of correctness; perf@p and the speedup
    over the faster baseline are over the timed cases."""
    timed = CaseResult(shape={"CASE": 0}, correct=True, t_candidate_ms=1.0, t_eager_ms=3.0)
    checked = CaseResult(shape={"CASE": 1}, correct=False, timed=False)
    row = row_from("abs", EvalResult(status=Status.INCORRECT, correct=False, cases=[timed, checked]))
    assert [c["timed"] for c in row.cases] == [True, False] and scores.correctness(row) == 0.5
    ok = row_from(
        "abs", EvalResult(status=Status.OK, correct=True, cases=[timed, checked.model_copy(update={"correct": True})])
    )
    assert ok.speedup_best == pytest.approx(3.0) and scores.perf_at([ok], 2.0) == 1.0
