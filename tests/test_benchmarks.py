"""The benchmark scripts run end to end (on the CPU, on a small seed): they must not rot between GPU sessions."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys

import pytest

from tests.conftest import ROOT
from tests.doubles import kernel


def script(name: str, *args: object) -> list[str]:
    """The command that runs benchmarks/NAME with these arguments."""
    return [sys.executable, str(ROOT / "benchmarks" / name), *map(str, args)]


def test_tune_vs_grid_runs_grid_and_search_and_keeps_partial_results(tmp_path):
    out = tmp_path / "tvg.json"
    # A plain PyTorch seed with one tunable of 8 values (what the script does is the same for any seed; a C++
    # seed made each of its 11 evaluations a build of its own, 55-150 s in all on CI's 2 cores).
    seed = tmp_path / "seed.py"
    seed.write_text(kernel(1))
    cmd = script(
        "tune_vs_grid.py", "--target", "cpu", "--problem", ROOT / "tests" / "fixtures" / "transpose.py",
        "--seed", seed, "--strategies", "greedy", "--fraction", "0.25", "--out", out,
    )  # fmt: skip
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, p.stderr[-2000:]
    data = json.loads(out.read_text())
    assert len(data["grid"]) == 8 and data["budget"] == 2
    assert all(g["status"] == "ok" for g in data["grid"]), data["grid"]
    assert {"worker_start", "load", "correctness", "timing"} <= set(data["grid_stage_median_s"])
    greedy = data["search"]["greedy"]
    assert greedy["nodes"] == 2 and greedy["best_fitness"] > 0
    assert "| greedy |" in p.stdout

    # A grid stopped part-way resumes where it stopped: only the missing configurations are evaluated.
    data["grid"] = data["grid"][:6]
    data["grid_complete"] = False
    out.write_text(json.dumps(data))
    p = subprocess.run([*cmd, "--grid-only"], capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, p.stderr[-2000:]
    assert (
        "6 grid configurations done" in p.stdout and p.stdout.count("grid ") == 2 + 1
    )  # the resume line + 2 evaluations
    resumed = json.loads(out.read_text())
    assert len(resumed["grid"]) == 8 and resumed["grid_complete"]
    assert len({json.dumps(g["params"], sort_keys=True) for g in resumed["grid"]}) == 8

    # The strategies alone (as on a second GPU), then merged with the grid for the comparison.
    searched = tmp_path / "search.json"
    i = cmd.index("--out")
    p = subprocess.run([*cmd[:i], "--search-only", "--out", str(searched)], capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, p.stderr[-2000:]
    assert "grid" not in json.loads(searched.read_text())
    merged = tmp_path / "merged.json"
    p = subprocess.run(
        [*cmd[:2], "--report", str(out), str(searched), "--out", str(merged)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert p.returncode == 0, p.stderr[-2000:]
    assert "| greedy |" in p.stdout and len(json.loads(merged.read_text())["grid"]) == 8


def test_offline_sass_compiles_a_kernel_for_hopper_without_a_gpu():
    """The shipped softmax kernel, compiled for sm_90 here: aligned rows give 16-byte loads; the odd-size variant
    (no 16-divisibility assumed for the strides) does not."""

    def report(*extra: str) -> dict:
        cmd = script(
            "offline_sass.py", ROOT / "examples" / "softmax" / "candidate_triton.py", "_softmax_rows_kernel",
            "--const", "BLOCK_ROWS=2", "--const", "BLOCK_N=1024", "--json", *extra,
        )  # fmt: skip
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
        assert p.returncode == 0, p.stderr[-2000:]
        return json.loads(p.stdout)

    aligned = report()
    assert aligned["arch"] == "sm_90" and aligned["registers"] > 0 and aligned["stack_bytes"] == 0
    assert aligned["programs_per_sm_by_registers"] >= 1
    assert any(name.startswith("LDG.E.128") for name in aligned["instructions"]), aligned["instructions"]
    odd = report("--no-div16", "x_row_stride", "y_row_stride")
    assert not any(name.startswith("LDG.E.128") for name in odd["instructions"]), odd["instructions"]


def test_case_sweep_reads_the_problem_beside_the_path_given_not_beside_a_symlinks_target(tmp_path):
    # suites/ranking/conv1d_fp32/seed_triton.py links to conv1d_fp16's seed: a sweep of the link must time the
    # fp32 problem, not the fp16 one beside the link's target.
    problem = tmp_path / "small" / "problem.py"
    problem.parent.mkdir()
    source = (ROOT / "examples" / "softmax" / "problem.py").read_text()
    problem.write_text(f"{source}\n\nSHAPE_CASES = [{{'BATCH': 3, 'DIM': 40}}]\n")
    (problem.parent / "kernel.py").symlink_to(ROOT / "examples" / "softmax" / "candidate_triton.py")
    out = tmp_path / "sweep.json"
    cmd = script("case_sweep.py", problem.parent / "kernel.py")
    cmd += ["--case", "0", "--grid", "NUM_WARPS=4", "--device", "cpu", "--out", str(out)]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=300, env={**os.environ, "TRITON_INTERPRET": "1"})
    assert p.returncode == 0, p.stderr[-2000:]
    assert json.loads(out.read_text())["case"] == {"BATCH": 3, "DIM": 40}


def test_kb_oneshot_takes_a_suite_as_its_seeds_and_starts_and_refuses_an_unknown_name(tmp_path):
    import importlib.util

    spec = importlib.util.spec_from_file_location("kb_oneshot", ROOT / "benchmarks" / "kb_oneshot.py")
    kb = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(kb)
    jobs = {name: kernel.name for name, _, kernel in kb._suite_jobs("ranking", "cuda")}
    assert jobs["mapid/seed_triton"] == "seed_triton.py"
    assert jobs["interformer_pffn/candidate_splitk"] == "candidate_splitk.py"
    assert not any(k.endswith("seed_cpp") for k in jobs)  # cuda prefers the Triton seed
    cmd = script("kb_oneshot.py", "ranking", "--out", tmp_path / "x.json")
    p = subprocess.run([*cmd, "--only", "mapid,nosuch"], capture_output=True, text=True, timeout=120)
    assert p.returncode != 0 and "no problem named nosuch" in p.stderr and "mapid" in p.stderr
    assert not (tmp_path / "x.json").exists()
    cmd[2] = str(tmp_path / "nothing")
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert p.returncode != 0 and "neither a one-shot folder" in p.stderr and "Traceback" not in p.stderr


def test_eval_timeline_times_the_parents_steps_between_the_workers_events(tmp_path):
    out = tmp_path / "timeline.json"
    fixtures = ROOT / "tests" / "fixtures"
    cmd = script(
        "eval_timeline.py", "--target", "cpu", "--problem", fixtures / "kb_relu.py",
        "--candidate", fixtures / "candidates" / "relu_ok.py", "--n", "1", "--pause-s", "0.2", "--out", out,
    )  # fmt: skip
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr[-2000:]
    (run,) = json.loads(out.read_text())
    events = [what for _, what in run["events_ms"]]
    assert run["status"] == "ok" and 0 <= run["unstaged_s"] < run["wall_s"], run
    for step in ("evaluate <", "send_job <", "stage load", "result", "kill <", "kill >", "evaluate >"):
        assert step in events, events


def test_gpu_census_attributes_each_process_by_its_ancestry():
    """benchmarks/gpu_census.py's attribution, on a process table of its own (NVML needs a GPU)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("gpu_census", ROOT / "benchmarks" / "gpu_census.py")
    census = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(census)
    mib = 2**20
    table = {100: (1, 10), 101: (100, 11), 102: (101, 12), 103: (100, 13), 200: (1, 20)}  # pid: (ppid, start)
    known: dict = {}
    rows = census.attribute(100, {100: mib, 102: 5 * mib, 200: 2 * mib}, table, known)
    assert {r["pid"]: (r["role"], r["group"]) for r in rows} == {
        100: ("parent", None),
        102: ("group", 101),
        200: ("other", None),
    }
    first = {"t": 0.0, "device_used_mib": 8, "processes": rows}
    del table[101]
    table[102] = (1, 12)  # killed with its group, reparented, still releasing its memory
    table[104] = (103, 14)
    rows = census.attribute(100, {102: 5 * mib, 104: 3 * mib}, table, known)
    assert {r["pid"]: (r["role"], r["group"]) for r in rows} == {102: ("exiting", 101), 104: ("group", 103)}
    summary = census.summarize([first, {"t": 0.25, "device_used_mib": 8, "processes": rows}])
    assert summary["peak_mib"] == {"parent": 1, "group": 5, "exiting": 5, "other": 2}
    assert summary["most_groups_holding"] == 2 and summary["most_groups_at_s"] == 0.25


@pytest.mark.parametrize("name", ["copy_floor.py", "harness_gpu.py", "header_build.py", "llm_report.py"])
def test_the_scripts_without_a_cpu_run_of_their_own_start_and_state_their_options(name):
    p = subprocess.run(script(name, "--help"), capture_output=True, text=True, timeout=120)
    assert p.returncode == 0 and "usage:" in p.stdout, p.stderr[-2000:]


def test_error_budget_runs_on_the_cpu_and_rejects_one_part_in_a_thousand():
    p = subprocess.run(script("error_budget.py"), capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr[-2000:]
    assert "accepted" in p.stdout and "rejected" in p.stdout


def test_the_package_imports_neither_the_lab_nor_the_benchmarks():
    imports = re.compile(r"^\s*(?:from|import)\s+(lab|benchmarks)\b", re.MULTILINE)
    found = [str(p) for p in (ROOT / "kernelevolve").rglob("*.py") if imports.search(p.read_text())]
    assert not found, found


def test_memory_table_reads_a_census_and_a_bench(tmp_path):
    data = ROOT / "docs" / "benchmarks" / "data" / "gpu_memory_2026-12-07_h200"
    cmd = script("memory_table.py", data / "census.jsonl.gz", data / "bench_results.json")
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr[-2000:]
    assert "| l1_88_MinGPTNewGelu | ok |" in p.stdout and "| evaluations holding memory at once, most | 1 |" in p.stdout


def test_multi_gpu_rates_and_drift_arithmetic():
    """benchmarks/multi_gpu.py's criteria (issue 50): each count's rate against N x the one-device rate, and a
    busy median judged against the single-device spread. (The script itself ran on the CPU by hand, `--target cpu`:
    its benches take minutes.)"""
    import importlib.util

    spec = importlib.util.spec_from_file_location("multi_gpu", ROOT / "benchmarks" / "multi_gpu.py")
    multi_gpu = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(multi_gpu)
    measured = [
        {"devices": n, "per_minute": rate, "evaluations": 80, "wall_s": 1.0}
        for n, rate in ((1, 10.0), (2, 18.0), (4, 30.0))
    ]
    runs = multi_gpu.rates(measured)
    assert [r["meets_target"] for r in runs] == [True, True, False]
    assert runs[2]["scaling"] == pytest.approx(0.75)
    steady = multi_gpu.drift([1.0, 1.1, 0.9], [1.05, 1.0, 1.1])
    assert steady["within_spread"] and steady["alone"]["spread"] == pytest.approx(0.2)
    assert not multi_gpu.drift([1.0, 1.01, 0.99], [1.2, 1.3, 1.25])["within_spread"]
    text = multi_gpu.table({"runs": runs + [{"devices": 8, "failed": "bench exit 2"}], "drift": {"2": steady}})
    assert "| 4 | 80 | 1.0 | 30.0 | 0.75 | no |" in text
    assert "beside 1 busy device(s)" in text and "within the spread" in text and "failed: bench exit 2" in text
