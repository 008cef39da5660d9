"""`kernelevolve bench`: suites of seeds, searches, KernelBench checkouts; failures reported, not fatal."""

from __future__ import annotations

import json
import shutil
import sqlite3
import subprocess
import sys

import pytest

from kernelevolve.cli.bench_cmd import Header, _write
from kernelevolve.result import CaseResult, EvalResult, HostContention, Status
from kernelevolve.suites.bench import BenchRow, SuiteError, discover, fast_p, kernelbench, markdown, row_from
from tests.conftest import CANDIDATES, FIXTURES
from tests.fake_llm import FakeLLMServer, Reply

RELU = """```python
import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, x):
        return x.clamp_min(0.0)
```"""


@pytest.fixture
def suite(tmp_path):
    for name, problem, seed in (
        ("relu", "kb_relu.py", "relu_ok.py"),
        ("broken", "bad_get_inputs.py", "relu_ok.py"),
        ("noseed", "kb_relu.py", None),
    ):
        (tmp_path / "suite" / name).mkdir(parents=True)
        shutil.copy(FIXTURES / problem, tmp_path / "suite" / name / "problem.py")
        if seed:
            shutil.copy(CANDIDATES / seed, tmp_path / "suite" / name / "seed.py")
    return tmp_path / "suite"


def bench(tmp_path, *args):
    cmd = [
        sys.executable,
        "-m",
        "kernelevolve",
        "bench",
        *args,
        "--target",
        "cpu",
        "--trials",
        "1",
        "--out",
        str(tmp_path / "out"),
        "--runs-dir",
        str(tmp_path / "runs"),
    ]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=600)


def test_seeds_only_table_and_json(suite, tmp_path):
    with (suite / "relu" / "problem.py").open("a") as f:
        f.write('\nTARGET_SPEEDUP = {"speedup": 1000.0, "note": "out of reach"}\n')
    p = bench(tmp_path, str(suite), "--no-search")
    assert p.returncode == 0, p.stderr
    rows = {r["name"]: r for r in json.loads((tmp_path / "out" / "results.json").read_text())["rows"]}
    assert rows["relu"]["status"] == "ok" and rows["relu"]["speedup_eager"] > 0
    assert rows["broken"]["status"] == "problem_error" and "get_inputs() raised" in rows["broken"]["reason"]
    assert rows["noseed"]["status"] == "not_evaluated"
    target = rows["relu"]["target"]
    assert (
        target["speedup"] == 1000.0
        and target["met"] is False
        and target["measured"] == pytest.approx(rows["relu"]["cases"][0]["speedup_eager"])
    )
    md = (tmp_path / "out" / "results.md").read_text()
    assert "| relu | ok" in md and "fast_p over eager: p=1:" in md  # "ok, unreliable" where calls are too short
    assert "| relu | 1000.00x | case 0 |" in md and "| no | " in md and "out of reach" in md
    # The row's account of the miss: the case beside a copy of its bytes, timed in the same loop
    assert rows["relu"]["cases"][0]["t_copy_ms"] > 0 and target["t_copy_ms"] > 0
    assert "a device copy of its bytes takes" in md and "needed, faster than that copy" in md
    assert rows["relu"]["stages"]["load"] > 0 and rows["relu"]["stages"]["timing"] > 0


def test_copy_floor_is_timed_only_when_asked(cpu_evaluator, relu_problem):
    plain = cpu_evaluator.evaluate(relu_problem, CANDIDATES / "relu_ok.py", trials=1)
    floored = cpu_evaluator.evaluate(relu_problem, CANDIDATES / "relu_ok.py", trials=1, copy_floor=True)
    assert plain.correct and floored.correct
    assert all(c.roofline.copy_ms is None for c in plain.cases)
    assert all(c.roofline.copy_ms and c.roofline.copy_ms > 0 and c.roofline.min_bytes for c in floored.cases)


def test_target_cells_read_tiny_floors():
    from kernelevolve.suites.bench import _target_cells

    cells = _target_cells(
        {
            "speedup": 2.5,
            "case": 4,
            "shape": {"ROWS": 256},
            "measured": 1.96,
            "met": False,
            "t_candidate_ms": 0.0101,
            "t_eager_ms": 0.0198,
            "t_roofline_ms": 3.39e-5,
            "t_copy_ms": 0.0042,
        }
    )
    assert "10.1 us against a floor of 0.0339 us (<1%)" in cells
    assert "a device copy of its bytes takes 4.2 us; 7.92 us needed |" in cells


def test_target_speedup_is_read_statically_and_checked(tmp_path):
    from kernelevolve.problem.problem import ProblemError, load_problem, target_speedup

    source = (FIXTURES / "kb_relu.py").read_text()
    path = tmp_path / "problem.py"
    path.write_text(source)
    assert target_speedup(load_problem(path)) is None
    path.write_text(source + '\nTARGET_SPEEDUP = {"speedup": 2.5, "case": 0, "note": "paper"}\n')
    t = target_speedup(load_problem(path))
    assert (t.speedup, t.case, t.note) == (2.5, 0, "paper")
    for bad in ('{"speedup": -1}', '{"speedup": 2, "cases": 1}', "compute_target()", '{"case": 1}'):
        path.write_text(source + f"\nTARGET_SPEEDUP = {bad}\n")
        with pytest.raises(ProblemError, match="TARGET_SPEEDUP"):
            target_speedup(load_problem(path))
    # The case must name a shape case: kb_relu has none declared, so only case 0 exists
    path.write_text(source + '\nTARGET_SPEEDUP = {"speedup": 2.5, "case": 1}\n')
    with pytest.raises(ProblemError, match="case 1 is not a shape case"):
        target_speedup(load_problem(path))
    two_cases = source + '\nSHAPE_CASES = [{"dim": 8}, {"dim": 16}]\n'
    path.write_text(two_cases + 'TARGET_SPEEDUP = {"speedup": 2.5, "case": 1}\n')
    assert target_speedup(load_problem(path)).case == 1
    path.write_text(two_cases + 'TARGET_SPEEDUP = {"speedup": 2.5, "case": 2}\n')
    with pytest.raises(ProblemError, match="SHAPE_CASES has 2"):
        target_speedup(load_problem(path))
    # SHAPE_CASES built by code cannot be checked statically: the row says the index names no case
    from kernelevolve.problem.problem import TargetSpeedup
    from kernelevolve.suites.bench import apply_target

    row = apply_target(
        BenchRow("r", "ok", True, 2.0, cases=[{"shape": {}, "speedup_eager": 2.0}]), TargetSpeedup(2.5, 2)
    )
    assert row.target["met"] is False and row.target["note"] == "no shape case 2 (SHAPE_CASES has 1)"


def test_search_mode_runs_a_search_per_problem(suite, tmp_path):
    shutil.rmtree(suite / "broken")
    shutil.rmtree(suite / "noseed")
    another = (CANDIDATES / "relu_ok.py").read_text().replace("x.clamp_min(0.0)", "x.clamp(min=0.0)")
    (suite / "relu" / "candidate_relu.py").write_text(another)
    p = bench(tmp_path, str(suite), "--budget", "2")
    assert p.returncode == 0, p.stderr
    (row,) = json.loads((tmp_path / "out" / "results.json").read_text())["rows"]
    assert row["status"] == "ok" and row["run"] and row["worst_case"] > 0
    assert row["kernel"].endswith("exports/relu.py") and (tmp_path / "out" / "exports" / "relu.py").is_file()
    assert row["search"].startswith("2 nodes")
    with sqlite3.connect(tmp_path / "runs" / "kernelevolve.db") as con:
        ops = [o for (o,) in con.execute("select operator from nodes where run_id = ? order by step", (row["run"],))]
    assert ops == ["seed", "start"]  # the problem folder's candidate joined the search
    p = bench(tmp_path, str(suite), "--budget", "2")  # the same command again: the same run, continued
    assert p.returncode == 0, p.stderr
    (again,) = json.loads((tmp_path / "out" / "results.json").read_text())["rows"]
    assert again["run"] == row["run"] and again["search"].startswith("2 nodes; budget of 2 nodes reached")
    # The run was finished and its export unchanged: the kept evaluation serves the row, no device time spent.
    assert "evaluation of " in again["search"] and "reused (--remeasure evaluates it again)" in again["search"]
    assert again["speedup_eager"] == row["speedup_eager"] and again["stages"] == row["stages"]
    p = bench(tmp_path, str(suite), "--budget", "2", "--remeasure")
    assert p.returncode == 0, p.stderr
    (measured,) = json.loads((tmp_path / "out" / "results.json").read_text())["rows"]
    assert measured["search"] == "2 nodes; budget of 2 nodes reached" and measured["status"] == "ok"
    assert measured["stages"] != row["stages"]  # evaluated afresh


def test_time_bounds_each_search_and_the_row_says_why_it_stopped(suite, tmp_path):
    shutil.rmtree(suite / "broken")
    shutil.rmtree(suite / "noseed")
    # The seed's evaluation outlasts the limit whatever a worker's start costs (a forked one starts in far less).
    seed = suite / "relu" / "seed.py"
    seed.write_text("import time\ntime.sleep(1.5)\n" + seed.read_text())
    p = bench(tmp_path, str(suite), "--budget", "50", "--time", "1")
    assert p.returncode == 0, p.stderr
    (row,) = json.loads((tmp_path / "out" / "results.json").read_text())["rows"]
    assert row["status"] == "ok" and (tmp_path / "out" / "exports" / "relu.py").is_file()
    assert "time limit of 1 s reached" in row["search"], row["search"]
    assert "at most 1 s each" in (tmp_path / "out" / "results.md").read_text()


def test_kernelbench_checkout_with_an_llm(tmp_path):
    level = tmp_path / "kb" / "KernelBench" / "level1"
    level.mkdir(parents=True)
    shutil.copy(FIXTURES / "kb_relu.py", level / "1_ReLU.py")
    shutil.copy(FIXTURES / "kb_relu.py", level / "2_Other.py")
    assert [i.name for i in kernelbench(tmp_path / "kb", 1, "1")] == ["1_ReLU"]
    with pytest.raises(SuiteError, match="no KernelBench/level3"):
        kernelbench(tmp_path / "kb", 3, None)
    with FakeLLMServer("openai", default=Reply(RELU)) as server:
        p = bench(
            tmp_path,
            "kernelbench",
            "--path",
            str(tmp_path / "kb"),
            "--level",
            "1",
            "--problems",
            "1",
            "--budget",
            "1",
            "--llm",
            "vllm:fake",
            "--llm-base-url",
            server.base_url,
        )
    assert p.returncode == 0, p.stderr
    (row,) = json.loads((tmp_path / "out" / "results.json").read_text())["rows"]
    assert row["name"] == "1_ReLU" and row["status"] == "ok"


def test_discovery_errors_and_fast_p(tmp_path):
    with pytest.raises(SuiteError, match="no problems found"):
        discover(str(tmp_path), "cpu")
    rows = [BenchRow("a", "ok", True, 2.5), BenchRow("b", "ok", True, 1.2), BenchRow("c", "incorrect", False, None)]
    assert fast_p(rows, 1.0) == pytest.approx(2 / 3) and fast_p(rows, 2.0) == pytest.approx(1 / 3)


def _contended_ok() -> EvalResult:
    case = CaseResult(shape={"N": 8}, correct=True, t_candidate_ms=1.0, t_eager_ms=3.0, speedup=3.0)
    case.reliability.contention = HostContention(shortfall=0.8, spread=1.7, candidate_cpu=0.0, contended=True)
    return EvalResult(status=Status.OK, correct=True, cases=[case]).finalize()


def test_unreliable_rows_are_marked_and_left_out_of_fast_p_unless_kept(tmp_path):
    """Issue 46 item 9: an ok timed on a contended host and an inconclusive row are marked, with the measured
    spread, and fast_p is over the other rows unless --keep-unreliable; results.json says which were left out."""
    busy = row_from("busy", _contended_ok())
    assert busy.unreliable.startswith("a contended host") and "spread 1.70x" in busy.unreliable
    stuck = BenchRow("stuck", "inconclusive", False, reason="inconclusive: timing cross-check: ...")
    rows = [busy, stuck, BenchRow("plain", "ok", True, 1.5), BenchRow("slow", "ok", True, 0.5)]
    assert fast_p(rows, 1.0) == pytest.approx(1 / 2) and fast_p(rows, 2.0) == 0
    assert fast_p(rows, 2.0, keep_unreliable=True) == pytest.approx(1 / 4)
    md = markdown(rows, "# t")
    assert "| busy | ok, unreliable |" in md and "| stuck | inconclusive |" in md
    assert "their figures left out of fast_p (--keep-unreliable counts them)" in md
    assert f"- busy: {busy.unreliable}" in md and "- stuck: inconclusive: timing cross-check" in md
    assert "fast_p over eager: p=1: 0.50, p=1.5: 0.00, p=2: 0.00 (over 2 of 4 problems: 2 unreliable left out)" in md
    kept = markdown(rows, "# t", keep_unreliable=True)
    assert "counted in fast_p (--keep-unreliable)" in kept and "left out" not in kept
    header = Header("s", "cpu", "now", True, 1, "greedy", None, tmp_path, keep_unreliable=False)
    _write(tmp_path, rows, header)
    written = json.loads((tmp_path / "results.json").read_text())
    assert written["left_out"] == ["busy", "stuck"] and written["keep_unreliable"] is False
    assert written["rows"][0]["unreliable"] == busy.unreliable
    assert "Unreliable: these rows" not in markdown([BenchRow("plain", "ok", True, 1.5)], "# t")


def test_candidates_beside_a_problem_are_starting_kernels_the_target_can_time(suite):
    """candidate_*.py in a problem folder join the search; Triton ones not on the cpu target (interpreted, untimed)."""
    folder = suite / "relu"
    shutil.copy(CANDIDATES / "relu_ok.py", folder / "candidate_torch.py")
    shutil.copy(CANDIDATES / "relu_triton.py", folder / "candidate_triton.py")
    starts = {t: {i.name: [p.name for p in i.starts] for i in discover(str(suite), t)} for t in ("cpu", "cuda")}
    assert starts["cpu"] == {"relu": ["candidate_torch.py"], "broken": [], "noseed": []}
    assert starts["cuda"]["relu"] == ["candidate_torch.py", "candidate_triton.py"]


def test_the_table_lists_what_the_harness_flagged_for_review():
    """A row's figures that the harness doubts (a busy host, a very large speedup) say so under the table."""
    result = EvalResult(status=Status.OK, correct=True, review=["{'N': 8}: speedup 12.0x exceeds 10x: review"])
    flagged = row_from("flagged", result)
    assert flagged.review == result.review
    md = markdown([flagged, BenchRow("plain", "ok", True, 1.5)], "# t")
    assert "Listed for review" in md and "- flagged: {'N': 8}: speedup 12.0x exceeds 10x" in md
    assert "plain:" not in md
    assert "Listed for review" not in markdown([BenchRow("plain", "ok", True, 1.5)], "# t")


def test_search_skips_the_compile_baseline_and_evaluates_the_export_with_it(suite, tmp_path, cpu_evaluator):
    """On targets that time torch.compile, a search runs without it (5-15 s per evaluation on a GPU); the row is
    the exported module (per-case dispatch, the reference where no kernel won) evaluated with it, policy off."""
    from dataclasses import replace

    from kernelevolve.cli.bench_cmd import BenchOptions, _one
    from kernelevolve.eval.wire import EvalOptions
    from kernelevolve.platforms import get_platform
    from kernelevolve.store.store import Store
    from kernelevolve.suites.bench import BenchItem

    calls: list[tuple[str, dict]] = []

    class Recorder:
        platform = replace(get_platform("cpu"), compile_baseline=True)  # as on a GPU target

        def evaluate(self, problem, candidate, options=None, /, **kw):
            opts = replace(options or EvalOptions(), **kw)
            calls.append((str(candidate), opts.fields()))
            # torch.compile on the CPU would only slow the test down
            return cpu_evaluator.evaluate(problem, candidate, opts, compile_baseline=False)

    item = BenchItem("relu", suite / "relu" / "problem.py", suite / "relu" / "seed.py")
    common = dict(no_search=False, budget=2, strategy="greedy", llm=[], llm_base_url=None, trials=1, timeout=60.0)
    exports = tmp_path / "exports"

    def run(runs: str, compile_baseline: bool):
        store = Store(tmp_path / runs)
        how = BenchOptions(baseline="eager", compile_baseline=compile_baseline, exports=exports, **common)
        return _one(item, store, [Recorder()], "cpu", how)

    row = run("runs", True)
    assert row.status == "ok" and row.run and row.worst_case and row.worst_case > 0
    assert row.kernel == str(exports / "relu.py") and "def forward" in (exports / "relu.py").read_text()
    *searched, (final_path, final_kw) = calls
    assert searched and all(kw["compile_baseline"] is False for _, kw in searched)
    assert final_path == row.kernel and final_kw["compile_baseline"] is None and final_kw["require_kernel"] is False
    calls.clear()
    run("runs2", False)
    assert calls and all(kw["compile_baseline"] is False for _, kw in calls)  # --no-compile-baseline: never


def test_a_search_with_no_correct_kernel_says_why(suite, tmp_path):
    shutil.rmtree(suite / "broken")
    shutil.rmtree(suite / "noseed")
    shutil.copy(CANDIDATES / "raises.py", suite / "relu" / "seed.py")
    p = bench(tmp_path, str(suite), "--budget", "2")
    assert p.returncode == 0, p.stderr
    (row,) = json.loads((tmp_path / "out" / "results.json").read_text())["rows"]
    assert row["status"] == "no_correct_kernel" and "the seed: runtime_error" in row["reason"], row


def test_only_runs_the_named_problems_and_rejects_unknown_names(suite, tmp_path):
    p = bench(tmp_path, str(suite), "--no-search", "--only", "relu")
    assert p.returncode == 0, p.stderr
    rows = json.loads((tmp_path / "out" / "results.json").read_text())["rows"]
    assert [r["name"] for r in rows] == ["relu"]
    p = bench(tmp_path, str(suite), "--no-search", "--only", "relu,nope")
    assert p.returncode == 2 and "no problem named nope" in p.stderr


def test_a_malformed_target_is_a_problem_error_before_any_evaluation(suite, tmp_path):
    with (suite / "relu" / "problem.py").open("a") as f:
        f.write('\nTARGET_SPEEDUP = {"speedup": "fast"}\n')
    p = bench(tmp_path, str(suite), "--only", "relu", "--budget", "2")
    assert p.returncode == 0, p.stderr
    (row,) = json.loads((tmp_path / "out" / "results.json").read_text())["rows"]
    assert row["status"] == "problem_error" and "TARGET_SPEEDUP must be a dict" in row["reason"]
    db = tmp_path / "runs" / "kernelevolve.db"
    if db.exists():  # no search was started: the store holds no run
        import sqlite3

        assert sqlite3.connect(db).execute("select count(*) from runs").fetchone()[0] == 0


def _case(n: int, floor: float, compiled: float, cand: float, copy: float | None = None) -> dict:
    return {
        "shape": {"N": n},
        "t_roofline_ms": floor,
        "t_compile_ms": compiled,
        "t_candidate_ms": cand,
        "t_copy_ms": copy,
    }


def test_the_roofline_rule_is_checked_where_compile_is_far_from_the_floor_and_misses_say_why():
    from kernelevolve.suites.bench import roofline_rule

    cases = [
        _case(1, 1.0, 3.9, 9.0),  # compile under 4x the floor: the rule does not apply
        _case(2, 1.0, 4.0, 1.5, 1.2),  # within 1.5x: met
        _case(3, 1.0, 8.0, 3.0, 2.0),  # the copy alone is 2x the floor
        _case(4, 1.0, 8.0, 3.0, 1.2),  # the copy is near the floor, the kernel 2.5x the copy
        _case(5, 1.0, 8.0, 3.0),  # no copy timed
    ]
    rows = [BenchRow("p", "ok", True, 2.0, cases=cases), BenchRow("broken", "incorrect", False, cases=cases)]
    checked = roofline_rule(rows)
    assert [c["shape"]["N"] for c in checked] == [2, 3, 4, 5] and {c["problem"] for c in checked} == {"p"}
    assert [c["met"] for c in checked] == [True, False, False, False]
    assert checked[1]["why"] == "a device copy of its bytes alone is 2.0x the floor"
    assert checked[2]["why"].startswith("2.5x a device copy of its bytes: the kernel, not DRAM")
    assert checked[3]["why"] == "no device copy timed for this case"
    md = markdown(rows, "# t")
    assert "Roofline rule" in md and "1 of 4 cases" in md and "| p | N=2 | 4.0x | 1.5x | 1.2x | yes | - |" in md
    assert "Roofline rule" not in markdown([BenchRow("p", "ok", True, 2.0, cases=cases[:1])], "# t")


def test_suite_table_merges_runs_later_rows_replacing_earlier_ones(tmp_path):
    from dataclasses import asdict

    from tests.conftest import ROOT

    first, second = tmp_path / "a.json", tmp_path / "b.json"
    first.write_text(
        json.dumps({"rows": [asdict(BenchRow("x", "ok", True, 2.0, 1.0)), asdict(BenchRow("y", "ok", True, 8.0, 4.0))]})
    )
    case = {"shape": {"N": 2}, "t_roofline_ms": 1.0, "t_compile_ms": 8.0, "t_candidate_ms": 3.0}
    second.write_text(json.dumps({"rows": [asdict(BenchRow("x", "ok", True, 4.5, 2.0, cases=[case]))]}))
    copies = tmp_path / "copies.json"
    copy_row = {"file": "suites/ranking/x/seed_triton.py", "shape": {"N": 2}, "copy": {"ms": 2.0}, "min_bytes": 10**9}
    peaks = {"device": "gpu", "bandwidth_gbs": 1000.0, "fp32_tflops": 1.0, "half_tflops": None}
    peaks |= {"datasheet": [500.0, 1.0, 1.0], "torch_version": ""}  # 1 GB: 1 ms at the measured 1 TB/s
    copies.write_text(json.dumps({"peaks": peaks, "rows": [copy_row, {**copy_row, "shape": {"N": 3}}]}))
    script = str(ROOT / "benchmarks" / "suite_table.py")
    p = subprocess.run(
        [sys.executable, script, str(first), str(second), "--copies", str(copies)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert p.returncode == 0, p.stderr
    assert "| x | ok | 4.50x |" in p.stdout and "| y | ok | 8.00x |" in p.stdout
    assert "geometric mean over eager: 6.00x (2 of 2 problems)" in p.stdout
    assert "Device copies for 1 cases from" in p.stdout  # the case of problem x with N = 2, from the copy_floor.py row
    assert "| x | N=2 | 8.0x | 3.0x | 2.0x | no | a device copy of its bytes alone is 2.0x the floor |" in p.stdout
    # The bytes set the 1 ms floor (the larger bandwidth, measured here, sets it): the kernel 33%, the copy 50%.
    assert "| x | N=2 | 33% | 50% | no | a device copy of its bytes reaches 50% |" in p.stdout


def test_suite_table_names_a_file_that_is_not_bench_results(tmp_path):
    from tests.conftest import ROOT

    other = tmp_path / "run9.json"
    other.write_text(json.dumps({"problems": []}))
    script = str(ROOT / "benchmarks" / "suite_table.py")
    p = subprocess.run([sys.executable, script, str(other)], capture_output=True, text=True, timeout=120)
    assert p.returncode != 0 and f"{other}: not a `kernelevolve bench` results.json" in p.stderr
    assert "Traceback" not in p.stderr
    good = tmp_path / "results.json"
    good.write_text(json.dumps({"rows": []}))
    p = subprocess.run([sys.executable, script, str(good), "--copies", str(other)], capture_output=True, text=True)
    assert p.returncode != 0 and f"{other}: not a `copy_floor.py` JSON" in p.stderr and "Traceback" not in p.stderr


def test_the_hbm_rule_takes_memory_bound_cases_against_the_measured_bandwidth_and_a_copy():
    from kernelevolve.suites.bench import hbm_rule

    def case(n, cand, copy=None, memory_bound=True):
        return {
            "shape": {"N": n},
            "memory_bound": memory_bound,
            "t_bytes_ms": 1.0,
            "t_candidate_ms": cand,
            "t_copy_ms": copy,
        }

    cases = [
        case(1, 1.2, 1.1),  # 83%: reached
        case(2, 2.0, 1.6),  # 50%, and a copy of the bytes only 62%
        case(3, 2.0, 1.1),  # 50% where a copy reaches 91%: the kernel is the limit
        case(4, 2.0),  # no copy timed
        case(5, 2.0, 1.1, memory_bound=False),  # the FLOPs set the floor: not under the rule
    ]
    checked = hbm_rule([BenchRow("p", "ok", True, 2.0, cases=cases), BenchRow("bad", "incorrect", False, cases=cases)])
    assert [c["shape"]["N"] for c in checked] == [1, 2, 3, 4]
    assert [c["met"] for c in checked] == [True, False, False, False]
    assert [c["why"] for c in checked[1:]] == [
        "a device copy of its bytes reaches 62%",
        "a device copy of its bytes reaches 91%: the kernel is the limit",
        "no device copy timed for this case",
    ]
    md = markdown([BenchRow("p", "ok", True, 2.0, cases=cases)], "# t")
    assert "HBM rule" in md and "1 of 4 cases" in md and "| p | N=1 | 83% | 91% | yes | - |" in md


def test_bench_with_an_inbox_advances_each_run_one_round_and_exits_waiting(suite, tmp_path):
    """--no-seeds: from the problem alone. Each problem's run sends its round of calls and stops waiting; the
    same command again finds the answers, evaluates them and exports the best."""
    box = tmp_path / "box"
    args = ("bench", str(suite), "--only", "relu,noseed", "--no-seeds", "--budget", "2", "--llm", f"inbox:{box}")
    p = bench(tmp_path, *args[1:])
    assert p.returncode == 0, p.stderr
    rows = json.loads((tmp_path / "out" / "results.json").read_text())["rows"]
    assert [r["status"] for r in rows] == ["waiting", "waiting"], rows
    assert "waiting: 2 of 2 problems wait for the model's answers to 4 calls" in p.stderr
    prompts = sorted(box.glob("*.prompt.md"))
    assert len(prompts) == 4 and {p.name.split("-")[0] for p in prompts} == {"relu", "noseed"}
    for k, prompt in enumerate(prompts):  # two different kernels per problem: no answer is a duplicate
        answer = RELU if k % 2 else RELU.replace("x.clamp_min(0.0)", "x.clamp(min=0.0)")
        prompt.with_name(prompt.name.replace(".prompt.", ".response.")).write_text(answer)
    p = bench(tmp_path, *args[1:])
    assert p.returncode == 0, p.stderr
    rows = json.loads((tmp_path / "out" / "results.json").read_text())["rows"]
    assert [r["status"] for r in rows] == ["ok", "ok"], rows


def test_a_kept_export_evaluation_is_reused_only_for_the_same_module_options_and_environment(tmp_path):
    from kernelevolve.eval import environment
    from kernelevolve.result import EvalResult, Status
    from kernelevolve.suites import export_evaluation

    env = environment.current("cpu")
    result = EvalResult(status=Status.OK, correct=True, speedup=2.0, fitness=2.0, device=env["device"])
    result.versions = {"harness": env["harness"], "torch": env["torch"], "triton": env["triton"]}
    options = {"trials": 3, "copy_floor": True}
    export_evaluation.keep(tmp_path, "module = 1\n", options, result)
    kept = export_evaluation.reusable(tmp_path, "module = 1\n", options, env)
    assert kept is not None and kept[0].speedup == 2.0 and kept[1].endswith("UTC")
    assert export_evaluation.reusable(tmp_path, "module = 2\n", options, env) is None  # another module
    assert export_evaluation.reusable(tmp_path, "module = 1\n", {**options, "trials": 1}, env) is None
    assert export_evaluation.reusable(tmp_path, "module = 1\n", options, {**env, "harness": "older"}) is None
    assert export_evaluation.reusable(tmp_path, "module = 1\n", options, {**env, "device": "another"}) is None
    timed_out = result.model_copy(update={"status": Status.TIMEOUT, "correct": False})
    export_evaluation.keep(tmp_path, "module = 1\n", options, timed_out)
    assert export_evaluation.reusable(tmp_path, "module = 1\n", options, env) is None  # never a timeout
    (tmp_path / export_evaluation.KEPT).write_text("{ torn")
    assert export_evaluation.reusable(tmp_path, "module = 1\n", options, env) is None
    # Where nothing can be written the row still stands; the reason says the next bench evaluates again.
    (tmp_path / "a_file").write_text("")
    unkept = export_evaluation.keep(tmp_path / "a_file" / "run", "module = 1\n", options, result)
    assert "was not kept" in unkept and "evaluates it again" in unkept
    assert export_evaluation.keep(tmp_path, "module = 1\n", options, result) == ""


def test_a_degraded_evaluation_is_named_in_the_table():
    rows = [BenchRow("a", "ok", True, 2.5, degraded=["judge split: the candidate ran in the judge's process"])]
    text = markdown(rows, "# t")
    assert "| a | ok, degraded |" in text
    assert "- a: judge split: the candidate ran in the judge's process" in text
