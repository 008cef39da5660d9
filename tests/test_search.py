"""The search on the cpu target: store, strategies end to end, resume after SIGKILL, export."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest
from sqlalchemy.exc import IntegrityError

from kernelevolve.problem.problem import load_problem
from kernelevolve.result import EvalResult, Status
from kernelevolve.search.export import input_signatures, matches
from kernelevolve.store.store import NodeRecord, Store, StoreError
from tests.conftest import CANDIDATES, FIXTURES

PROBLEM = FIXTURES / "transpose.py"
SEED = CANDIDATES / "transpose_cpp.py"


def optimize_cmd(runs_dir, *args: str) -> list[str]:
    return [
        sys.executable,
        "-m",
        "kernelevolve",
        "optimize",
        str(PROBLEM),
        "--seed",
        str(SEED),
        "--target",
        "cpu",
        "--runs-dir",
        str(runs_dir),
        "--trials",
        "1",
        "--json",
        *args,
    ]


def optimize(runs_dir, *args: str, **kw) -> subprocess.CompletedProcess:
    return subprocess.run(optimize_cmd(runs_dir, *args), capture_output=True, text=True, timeout=600, **kw)


def _result(fitness: float | None, status: Status = Status.OK) -> EvalResult:
    return EvalResult(status=status, correct=status is Status.OK, speedup=fitness, fitness=fitness)


def test_store_commits_nodes_edges_and_dedups(tmp_path):
    store = Store(tmp_path)
    run = store.create_run(problem_path="p.py", problem_hash="ph", platform="cpu", config={}, config_hash="c", budget=5)
    a = store.add_node(run.id, NodeRecord("seed", "x = 1\n", "h1", {"T": 1}, [], _result(1.0)), strategy_state={})
    b = store.add_node(
        run.id,
        NodeRecord("tune", "x = 2\n", "h2", {"T": 2}, [a.id], _result(2.0)),
        strategy_state={"k": 1},
        visit_updates={a.id: (1, 0.5)},
    )
    c = store.add_node(
        run.id,
        NodeRecord("crossover", "x = 3\n", "h3", {}, [b.id, a.id], _result(0.0, Status.INCORRECT)),
        strategy_state={},
    )
    nodes = store.nodes(run.id)
    assert [n.step for n in nodes] == [1, 2, 3]
    assert [e.parent_id for e in nodes[2].parents] == [b.id, a.id]
    assert nodes[0].visits == 1 and nodes[0].value_sum == 0.5
    assert store.get_run(run.id[:12]).strategy_state == "{}"
    assert store.path(nodes[1].kernel_path).read_text() == "x = 2\n"
    assert store.has_source(run.id, "h2") and not store.has_source(run.id, "h9")
    found = store.find_evaluated("ph", "cpu", "h2")
    assert found and found[0].id == b.id and found[1].fitness == 2.0
    assert store.find_evaluated("ph", "cuda", "h2") is None
    assert store.evaluation(c.id).status is Status.INCORRECT
    with pytest.raises(IntegrityError):  # the same source twice in one run is refused by the schema
        store.add_node(run.id, NodeRecord("tune", "x = 2\n", "h2", {}, [a.id], _result(1.0)), strategy_state={})
    assert len(store.nodes(run.id)) == 3


def test_store_reports_an_unusable_location(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("")
    with pytest.raises(StoreError, match="cannot create the runs directory"):
        Store(blocker / "runs")


@pytest.fixture(scope="module")
def greedy_run(tmp_path_factory):
    runs = tmp_path_factory.mktemp("greedy")
    p = optimize(runs, "--strategy", "greedy", "--budget", "6")
    assert p.returncode == 0, p.stderr
    return runs, json.loads(p.stdout), p.stderr


def test_greedy_tunes_the_cpp_seed_to_a_faster_kernel(greedy_run):
    _, out, stderr = greedy_run
    assert "no LLM configured: using the tune operator only" in stderr
    assert out["evaluations"] == 6 and out["best_node"] is not None
    assert out["best_fitness"] >= out["seed_fitness"]
    # TILE=1 does no cache blocking; a few steps of tuning find a clearly faster tile
    assert out["best_fitness"] > 1.15 * out["seed_fitness"], out
    assert "TILE = 1\n" not in open(out["best_kernel"]).read()


def test_a_starting_kernel_beside_the_seed_is_a_node_of_its_own(tmp_path):
    """--start: another kernel evaluated after the seed; the search (and the export) can then take it."""
    tiled = tmp_path / "transpose_tiled.py"
    tiled.write_text(SEED.read_text().replace("TILE = 1\n", "TILE = 32\n"))
    p = optimize(tmp_path, "--budget", "2", "--start", str(tiled))
    assert p.returncode == 0, p.stderr
    out = json.loads(p.stdout)
    assert "evaluating the starting kernel transpose_tiled.py" in p.stderr
    with sqlite3.connect(tmp_path / "kernelevolve.db") as con:
        ops = con.execute("select operator, params from nodes where run_id = ? order by step", (out["run"],)).fetchall()
    assert ops == [("seed", '{"TILE": 1}'), ("start", '{"TILE": 32}')]
    assert out["best_node"] == 2 and out["best_fitness"] > out["seed_fitness"], out
    again = optimize(tmp_path, "--budget", "3", "--start", str(tiled))  # resumed: the start is not evaluated twice
    assert again.returncode == 0 and "resumed" in again.stderr, again.stderr
    with sqlite3.connect(tmp_path / "kernelevolve.db") as con:
        ops = [o for (o,) in con.execute("select operator from nodes where run_id = ? order by step", (out["run"],))]
    assert ops == ["seed", "start", "tune"]
    missing = optimize(tmp_path, "--start", str(tmp_path / "nope.py"))
    assert missing.returncode == 2 and "nope.py: no such starting kernel" in missing.stderr


def test_progress_says_when_a_node_is_listed_for_review(tmp_path):
    """A search ranks nodes by their timings; one whose timing the harness doubts says so as it is scored."""
    cmd = optimize_cmd(tmp_path, "--budget", "1")
    cmd[cmd.index(str(SEED))] = str(CANDIDATES / "transpose_threads.py")  # more threads than cores: a review note
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=600, env={**os.environ, "COLUMNS": "400"})
    assert p.returncode == 0, p.stderr
    assert "node 1 (seed): ok" in p.stderr and "(review: " in p.stderr and "waited for a CPU" in p.stderr, p.stderr


@pytest.mark.parametrize("strategy", ["mcts", "evolve"])
def test_every_strategy_runs(tmp_path, strategy):
    p = optimize(tmp_path, "--strategy", strategy, "--budget", "4")
    assert p.returncode == 0, p.stderr
    out = json.loads(p.stdout)
    assert out["evaluations"] == 4 and out["best_fitness"] >= out["seed_fitness"] > 0


def test_rerunning_the_same_command_resumes_and_reports(greedy_run):
    runs, first, _ = greedy_run
    p = optimize(runs, "--strategy", "greedy", "--budget", "6")
    assert p.returncode == 0 and json.loads(p.stdout)["run"] == first["run"]
    assert "resumed (6 nodes stored)" in p.stderr


def test_sigkill_mid_run_then_resume_completes_without_duplicates(tmp_path):
    cmd = optimize_cmd(tmp_path, "--budget", "7")
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
    db = tmp_path / "kernelevolve.db"
    deadline = time.monotonic() + 300
    nodes = 0
    while time.monotonic() < deadline and nodes < 3:
        time.sleep(0.5)
        if db.exists():
            try:
                with sqlite3.connect(db) as con:
                    nodes = con.execute("select count(*) from nodes").fetchone()[0]
            except sqlite3.Error:
                pass
    assert nodes >= 3, "the run did not get going"
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    with sqlite3.connect(db) as con:
        status = con.execute("select status from runs").fetchone()[0]
    assert status == "running"  # killed: nothing had the chance to mark it
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, p.stderr
    assert "resumed" in p.stderr
    out = json.loads(p.stdout)
    with sqlite3.connect(db) as con:
        rows = con.execute("select source_hash, step from nodes").fetchall()
        evals = con.execute("select count(*) from evaluations").fetchone()[0]
        runs = con.execute("select count(*), max(status) from runs").fetchone()
    assert out["evaluations"] == 7 == len(rows) == evals
    assert len({h for h, _ in rows}) == 7 and sorted(s for _, s in rows) == list(range(1, 8))
    assert runs == (1, "done")


def test_export_dispatches_per_case_and_is_correct(greedy_run, cpu_evaluator, tmp_path):
    runs, out, _ = greedy_run
    exported = tmp_path / "exported.py"
    p = subprocess.run(
        [sys.executable, "-m", "kernelevolve", "export", out["run"], "--runs-dir", str(runs), "--out", str(exported)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert p.returncode == 0, p.stderr
    text = exported.read_text()
    assert "_DISPATCH" in text and "| case | shape | kernel | speedup |" in text
    result = cpu_evaluator.evaluate(load_problem(PROBLEM), exported, trials=2)
    assert result.status is Status.OK, result.reason
    assert all(c.correct for c in result.cases) and len(result.cases) == 2


def test_export_routes_each_case_a_kernel_won_to_it_and_the_rest_to_the_reference(tmp_path):
    """Deterministic: a node that won case 0 (2x) and lost case 1 (0.5x) gets case 0's inputs, the reference
    gets case 1's and any other shape."""
    import torch

    from kernelevolve.result import CaseResult
    from kernelevolve.search.export import export

    store = Store(tmp_path)
    run = store.create_run(
        problem_path=str(PROBLEM), problem_hash="ph", platform="cpu", config={}, config_hash="c", budget=2
    )
    won = EvalResult(
        status=Status.OK,
        correct=True,
        cases=[
            CaseResult(shape={"N": 2048}, correct=True, speedup=2.0),
            CaseResult(shape={"N": 1000}, correct=True, speedup=0.5),
        ],
    ).finalize()
    kernel = (
        "import torch.nn as nn\n\n\nclass ModelNew(nn.Module):\n"
        "    def forward(self, x):\n        return x.t().contiguous() + 0\n"
    )
    node = store.add_node(run.id, NodeRecord("seed", kernel, "h1", {}, [], won), strategy_state={})
    exported = tmp_path / "exported.py"
    choices = export(store, run, exported)
    assert [c.node for c in choices] == [node.id, None]
    namespace: dict = {}
    exec(compile(exported.read_text(), str(exported), "exec"), namespace)
    model = namespace["ModelNew"]()
    calls = []
    model.kernels[str(node.id)].register_forward_hook(lambda *a: calls.append("kernel"))
    model.reference.register_forward_hook(lambda *a: calls.append("reference"))
    for n in (2048, 1000, 7):
        x = torch.randn(n, n)
        assert torch.equal(model(x), x.t().contiguous())
    assert calls == ["kernel", "reference", "reference"]


def test_exported_triton_kernels_compile_outside_the_interpreter(tmp_path):
    """Triton's compiler reads a @triton.jit function's source (inspect), which code exec'd from a string does not
    have: the H200 bench found every exported Triton kernel failing to construct. The interpreter never reads
    it, so this runs the export in a process without TRITON_INTERPRET."""
    from kernelevolve.result import CaseResult
    from kernelevolve.search.export import export

    store = Store(tmp_path)
    run = store.create_run(
        problem_path=str(PROBLEM), problem_hash="ph", platform="cuda", config={}, config_hash="c", budget=1
    )
    won = EvalResult(
        status=Status.OK, correct=True, cases=[CaseResult(shape={"N": 2048}, correct=True, speedup=2.0)]
    ).finalize()
    kernel = (
        "import torch.nn as nn\nimport triton\nimport triton.language as tl\n\n\n@triton.jit\n"
        "def _copy(x_ptr, y_ptr, BLOCK: tl.constexpr):\n"
        "    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)\n"
        "    tl.store(y_ptr + offs, tl.load(x_ptr + offs))\n\n\n"
        "class ModelNew(nn.Module):\n    def forward(self, x):\n        return x.t().contiguous()\n"
    )
    node = store.add_node(run.id, NodeRecord("seed", kernel, "h1", {}, [], won), strategy_state={})
    exported = tmp_path / "exported.py"
    export(store, run, exported)
    check = (
        "import importlib.util, inspect, sys\n"
        f"spec = importlib.util.spec_from_file_location('exported', {str(exported)!r})\n"
        "m = importlib.util.module_from_spec(spec); spec.loader.exec_module(m)\n"
        f"k = m.ModelNew().kernels['{node.id}']\n"
        "jit = type(k).forward.__globals__['_copy']\n"
        "assert type(jit).__name__ == 'JITFunction', type(jit)\n"
        "assert 'tl.store' in jit.src and 'def _copy' in inspect.getsource(jit.fn)\n"
        "print('ok')\n"
    )
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    p = subprocess.run([sys.executable, "-c", check], capture_output=True, text=True, timeout=120, env=env)
    assert p.returncode == 0 and "ok" in p.stdout, p.stderr[-3000:]


def test_export_patterns_wildcard_data_dependent_sizes():
    """Jagged inputs change their total length with every draw: that dimension matches anything, the others
    (batch, width) still tell the shape cases apart; sizes that need real data are drawn on the CPU."""
    import torch

    suite = FIXTURES.parents[1] / "suites" / "ranking"
    (case0, p0), (case1, p1), *_ = input_signatures(str(suite / "jagged_sum" / "problem.py"))
    assert p0[0][0] == (None, case0["DIM"]) and p0[1][0] == (case0["BATCH"] + 1,)
    torch.manual_seed(7)
    values = torch.randn(12345, case0["DIM"])
    offsets = torch.zeros(case0["BATCH"] + 1, dtype=torch.int64)
    key = ((tuple(values.shape), str(values.dtype)), (tuple(offsets.shape), str(offsets.dtype)))
    assert matches(p0, key) and not matches(p1, key)
    (_, truncate), *_ = input_signatures(str(suite / "batch_event_truncate" / "problem.py"))  # .item() inside
    assert truncate[0][0] == (8, 512) and truncate[2][0] == (None,)


def test_runs_and_show_list_the_run(greedy_run):
    runs, out, _ = greedy_run
    p = subprocess.run(
        [sys.executable, "-m", "kernelevolve", "runs", "--runs-dir", str(runs)],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "COLUMNS": "200"},
    )
    assert out["run"] in p.stdout and "greedy" in p.stdout and "done" in p.stdout
    p = subprocess.run(
        [sys.executable, "-m", "kernelevolve", "show", out["run"], "--runs-dir", str(runs)],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "COLUMNS": "200"},
    )
    assert p.returncode == 0 and "lineage of the best" in p.stdout
    p = subprocess.run(
        [sys.executable, "-m", "kernelevolve", "show", "nope", "--runs-dir", str(runs)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert p.returncode == 2 and "no run 'nope'" in p.stderr


def test_warm_start_takes_the_earlier_runs_best_kernel_for_a_similar_problem(greedy_run, tmp_path):
    runs, first, _ = greedy_run
    similar = tmp_path / "transpose_small.py"
    similar.write_text(
        PROBLEM.read_text().replace(
            'SHAPE_CASES = [{"N": 2048}, {"N": 1000}]', 'SHAPE_CASES = [{"N": 1024}, {"N": 600}]'
        )
    )
    cmd = [
        sys.executable,
        "-m",
        "kernelevolve",
        "optimize",
        str(similar),
        "--seed",
        str(SEED),
        "--target",
        "cpu",
        "--runs-dir",
        str(runs),
        "--trials",
        "1",
        "--budget",
        "3",
        "--json",
    ]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, p.stderr
    assert f"warm start: run {first['run']}'s best kernel (node {first['best_node']}" in p.stderr
    out = json.loads(p.stdout)
    with sqlite3.connect(runs / "kernelevolve.db") as con:
        ops = con.execute(
            "select operator, kernel_path from nodes where run_id = ? order by step", (out["run"],)
        ).fetchall()
    assert [o for o, _ in ops][:2] == ["seed", "warm-start"]
    assert (runs / ops[1][1]).read_text() == open(first["best_kernel"]).read()
    with sqlite3.connect(runs / "kernelevolve.db") as con:
        config = json.loads(con.execute("select config from runs where id = ?", (first["run"],)).fetchone()[0])
    assert config["lessons"] and config["lessons"][0]["gain"] > 1  # what worked was distilled


def test_best_kernel_is_evaluated_once_against_torch_compile_after_the_search(greedy_run, cpu_evaluator):
    """On targets that time torch.compile, a search measured against eager runs without it and the best kernel is
    evaluated once with it at the end (search/final_eval); on cpu there is nothing to re-evaluate."""
    from rich.console import Console

    from kernelevolve.cli.search_cmd import _final_with_compile
    from kernelevolve.search.final_eval import compile_in_search

    runs, out, _ = greedy_run
    assert out["best_speedup_compile"] is None  # cpu: no compile baseline anywhere
    assert compile_in_search("eager", None) is False and compile_in_search("compile", None) is None
    store = Store(runs)
    (run,) = [r for r, _, _ in store.runs() if r.id == out["run"]]
    calls = []

    class GpuLike:
        platform = type("P", (), {"compile_baseline": True})()

        def evaluate(self, problem, candidate, **kw):
            calls.append((Path(candidate), kw))
            return cpu_evaluator.evaluate(problem, candidate, **{**kw, "compile_baseline": False})

    config = {"trials": 1, "baseline": "eager", "compile_baseline": True}
    final = _final_with_compile(store, run, load_problem(PROBLEM), config, GpuLike(), Console(quiet=True))
    assert final is not None and final.correct
    ((path, kw),) = calls
    assert path.resolve() == Path(out["best_kernel"]) and "compile_baseline" not in kw
    assert (runs / run.id / "best_with_compile.json").is_file()
    calls.clear()
    off = {**config, "compile_baseline": False}  # --no-compile-baseline
    assert _final_with_compile(store, run, load_problem(PROBLEM), off, GpuLike(), Console(quiet=True)) is None
    assert not calls
