"""Issue 16, items 6 and 10: a run's records as a user reads and removes them (nodes numbered within their run,
`show --all`, `show --node`, `runs rm`), `cache`, `--version`, and `bench` progress off a terminal. Runs are built
with the store API or searched on the test doubles: no worker, no build."""

from __future__ import annotations

import subprocess
import sys
from importlib.metadata import version

import pytest
from sqlalchemy import select
from typer.testing import CliRunner

from kernelevolve.cli import app, bench_cmd, runs_cmd
from kernelevolve.eval.builds.extension_cache import BUILT
from kernelevolve.eval.service.pool import SharedPool
from kernelevolve.platforms import get_platform
from kernelevolve.result import CaseResult, EvalResult, Status
from kernelevolve.search import session
from kernelevolve.search.session import Limits, RunSpec
from kernelevolve.store.models import Artifact
from kernelevolve.store.store import LLMCallRecord, NodeRecord, Store
from kernelevolve.suites.bench import BenchRow
from tests.conftest import FIXTURES
from tests.doubles import RuleEvaluator, kernel

PROBLEM = FIXTURES / "transpose.py"
WIDE = {"COLUMNS": "200"}


def cli(*args: str, input: str | None = None, env: dict | None = None):
    return CliRunner().invoke(app, list(args), input=input, env={**WIDE, **(env or {})})


def ok(speedup: float) -> EvalResult:
    """Correct: case 0 at `speedup`, case 1 at 0.5x (the reference wins it); fitness is their geometric mean."""
    return EvalResult(
        status=Status.OK,
        correct=True,
        cases=[
            CaseResult(
                shape={"N": 2048},
                correct=True,
                max_abs_err=0.0,
                max_rel_err=0.0,
                t_candidate_ms=1.0 / speedup,
                t_eager_ms=1.0,
                speedup=speedup,
            ),
            CaseResult(shape={"N": 1000}, correct=True, t_candidate_ms=2.0, t_eager_ms=1.0, speedup=0.5),
        ],
    ).finalize()


def source(tile: int) -> str:
    return kernel(tile)


@pytest.fixture
def records(tmp_path):
    """Two runs in one store: `earlier` (2 nodes) then `run`: seed (1), a tuned child (2, the best), a failed LLM
    child (3) and a node (4) whose evaluation was reused from the earlier run. The store's ids of `run`'s nodes are
    3-6, its numbers 1-4."""
    store = Store(tmp_path / "runs")

    def new_run():
        return store.create_run(
            problem_path=str(PROBLEM),
            problem_hash="ph",
            platform="cpu",
            config={"strategy": "greedy"},
            config_hash=f"c{len(store.runs())}",
            budget=5,
        )

    earlier = new_run()
    e1 = store.add_node(earlier.id, NodeRecord("seed", source(64), "e1", {"TILE": 64}, [], ok(1.1)), strategy_state={})
    e2 = store.add_node(
        earlier.id, NodeRecord("tune", source(128), "e2", {"TILE": 128}, [e1.id], ok(1.2)), strategy_state={}
    )
    run = new_run()
    seed = store.add_node(run.id, NodeRecord("seed", source(1), "h1", {"TILE": 1}, [], ok(1.0)), strategy_state={})
    tuned = store.add_node(
        run.id,
        NodeRecord(
            "tune",
            source(32),
            "h2",
            {"TILE": 32},
            [seed.id],
            ok(2.0),
            analysis={"status": "ok", "bottleneck": "memory", "summary": "near the copy floor", "advice": ["fuse"]},
        ),
        strategy_state={},
    )
    failed = EvalResult(
        status=Status.COMPILE_ERROR,
        correct=False,
        reason="error: expected ';' before '}' token [-Werror]",
        log_tail="ninja: build stopped: subcommand failed.\n",
    ).finalize()
    call = LLMCallRecord(
        1, "vllm:x:", [tuned.id], "# Task: improve [bold]node[/] 2", "```python\nBROKEN\n```", 100, 50, outcome="ok"
    )
    llm = store.add_node(
        run.id,
        NodeRecord("llm", source(32) + "BROKEN = 1\n", "h3", {"TILE": 32}, [tuned.id], failed, llm_call=call),
        strategy_state={},
    )
    reused = store.add_node(
        run.id,
        NodeRecord("tune", source(128), "e2", {"TILE": 128}, [seed.id], ok(1.2), reused_from=e2.id),
        strategy_state={},
    )
    assert [n.step for n in (seed, tuned, llm, reused)] == [1, 2, 3, 4] and seed.id == 3  # ids are the store's
    return store, earlier, run


def test_show_numbers_nodes_within_their_run_and_says_how_to_see_the_failed_ones(records):
    store, _, run = records
    p = cli("show", run.id, "--runs-dir", str(store.runs_dir))
    assert p.exit_code == 0, p.output
    lines = p.stdout.splitlines()
    best = next(line for line in lines if " tune " in line and f"{ok(2.0).fitness:.3f}x" in line)
    assert best.split()[1:4] == ["2", "│", "tune"]  # node 2, not the store's id 4
    assert "lineage of the best: 2 (tune) <- 1 (seed)" in p.stdout
    assert f"1 of 4 nodes not correct: `kernelevolve show {run.id} --runs-dir {store.runs_dir} --all`" in p.stdout
    assert "vllm:x:" in p.stdout  # the model's name as written, not an emoji


def test_show_all_lists_every_node_with_status_and_reason(records):
    store, _, run = records
    p = cli("show", run.id, "--runs-dir", str(store.runs_dir), "--all")
    assert p.exit_code == 0, p.output
    assert "all 4 nodes" in p.stdout and "not correct" not in p.stdout
    table = p.stdout.split("lineage of the best")[0]
    rows = [line for line in table.splitlines() if line.startswith("│ ")]
    assert [r.split("│")[1].strip() for r in rows] == ["1", "2", "3", "4"]
    assert [r.split("│")[3].strip() for r in rows] == ["-", "1", "2", "1"]  # parents, numbered within the run
    failed = rows[2]
    assert "compile_error" in failed and "error: expected ';' before '}' token [-Werror]" in failed


def test_show_node_prints_its_files_source_diff_evaluation_analysis_and_llm_transcript(records):
    store, _, run = records
    p = cli("show", run.id, "--runs-dir", str(store.runs_dir), "--node", "3")
    assert p.exit_code == 0, p.output
    out = p.stdout
    folder = (store.runs_dir / run.id / "nodes" / "h3").resolve()
    assert f"run {run.id}, node 3 (llm): compile_error" in out and "parents: node 2 (tune)" in out
    assert f"files: {folder}: kernel.py, log.txt, result.json" in out
    assert f"== source: {folder / 'kernel.py'}" in out and "BROKEN = 1" in out
    assert "== diff from node 2 (tune), the parent" in out and "\n+BROKEN = 1\n" in out
    assert "--- node 2: " in out and "+++ node 3: " in out
    assert "status compile_error, correct False" in out and "reason: error: expected ';' before '}' token" in out
    assert "ninja: build stopped" in out  # a failed node's log
    assert "LLM call 1: vllm:x:, ok, 100 prompt and 50 completion tokens" in out
    assert "# Task: improve [bold]node[/] 2" in out and "```python\nBROKEN\n```" in out  # printed as written

    p = cli("show", run.id, "--runs-dir", str(store.runs_dir), "--node", "2")
    assert p.exit_code == 0, p.output
    assert "parents: node 1 (seed)" in p.stdout and "-TILE = 1\n+TILE = 32" in p.stdout
    assert "bottleneck: memory" in p.stdout and "summary: near the copy floor" in p.stdout and "  - fuse" in p.stdout
    case = next(line for line in p.stdout.splitlines() if '{"N": 2048}' in line)
    assert "True" in case and "0.5" in case and "2x" in case  # correct, kernel ms, speedup
    assert "LLM call" not in p.stdout
    p = cli("show", run.id[:-1], "--runs-dir", str(store.runs_dir), "--node", "1")  # a prefix of the run's id
    assert p.exit_code == 0 and "parents: none (a starting point of the run)" in p.stdout

    p = cli("show", run.id, "--runs-dir", str(store.runs_dir), "--node", "4")
    assert f"evaluation reused from run {records[1].id}, node 2" in p.stdout


def test_show_node_that_does_not_exist_is_a_usage_error(records):
    store, _, run = records
    p = cli("show", run.id, "--runs-dir", str(store.runs_dir), "--node", "9")
    assert p.exit_code == 2 and f"run {run.id} has no node 9 (its nodes are 1 to 4)" in p.stderr
    p = cli("show", run.id, "--runs-dir", str(store.runs_dir), "--node", "1", "--all")
    assert p.exit_code == 2 and "give one of them" in p.stderr


def test_export_names_the_chosen_nodes_by_their_number_within_the_run(records, tmp_path):
    store, _, run = records
    out = tmp_path / "exported.py"
    p = cli("export", run.id, "--runs-dir", str(store.runs_dir), "--out", str(out))
    assert p.exit_code == 0, p.output
    assert "case 0 {'N': 2048}: node 2 (2.00x)" in p.stderr and "case 1 {'N': 1000}: reference" in p.stderr


def test_progress_and_best_node_number_nodes_within_the_run(tmp_path):
    """The driver's progress lines and `optimize --json`'s best_node (RunOutcome) for a run whose nodes are not the
    first in the store."""
    seed = tmp_path / "seed.py"
    seed.write_text(kernel(1))
    store = Store(tmp_path / "runs")
    messages: list[str] = []
    for rng_seed, limits in ((1, Limits(budget=3)), (0, Limits(budget=4))):
        messages.clear()
        opened = session.open_run(store, RunSpec(PROBLEM, seed, rng_seed=rng_seed), limits)
        driver = session.build_driver(
            opened, [RuleEvaluator()], warm_start=False, on_update=lambda p: messages.append(p.message)
        )
        out = session.finish(opened, driver.run_search())
    numbered = sorted({int(m.split()[1]) for m in messages if m.startswith("node ")})
    assert numbered == [1, 2, 3, 4], messages  # not the store's 4-7
    rows = store.nodes(opened.run.id)
    best = next(r for r in rows if r.fitness == out.best_fitness)
    assert out.best_node == best.step and best.id == best.step + 3
    assert out.to_json()["best_node"] == best.step


def test_runs_rm_deletes_a_run_and_keeps_the_runs_that_reused_its_evaluations(records):
    store, earlier, run = records
    folder = store.runs_dir / earlier.id
    assert folder.is_dir()
    p = cli("runs", "rm", earlier.id, "--runs-dir", str(store.runs_dir))  # not a terminal: --yes is needed
    assert p.exit_code == 2 and "add --yes" in p.stderr and store.get_run(earlier.id) is not None
    p = cli("runs", "--runs-dir", str(store.runs_dir), "rm", earlier.id[:-1], "--yes")  # the listing's option too
    assert p.exit_code == 0, p.output
    assert f"deleted run {earlier.id}: 2 nodes, 0 LLM calls; removed {folder}" in p.stdout
    assert "1 node(s) of other runs had reused its evaluations and keep their own copies" in p.stdout
    assert store.get_run(earlier.id) is None and not folder.exists()
    with store.session() as s:  # its files' rows went with it (store/artifacts.py); the other run's stay
        kept = s.scalars(select(Artifact.path)).all()
    assert not any(k.startswith(f"{earlier.id}/") for k in kept) and any(k.startswith(f"{run.id}/") for k in kept)
    # the other run is intact: its reused node has its own evaluation and files, and serves dedup in its place
    reused = store.node_by_step(run.id, 4)
    assert reused.reused_from is None and store.evaluation(reused.id).fitness == ok(1.2).fitness
    assert store.find_evaluated("ph", "cpu", "e2")[0].id == reused.id
    assert cli("show", run.id, "--runs-dir", str(store.runs_dir), "--node", "4").exit_code == 0
    p = cli("runs", "--runs-dir", str(store.runs_dir))
    assert p.exit_code == 0 and run.id in p.stdout and earlier.id not in p.stdout
    p = cli("runs", "rm", "nope", "--runs-dir", str(store.runs_dir), "--yes")
    assert p.exit_code == 2 and "no run 'nope'" in p.stderr


def test_runs_rm_asks_on_a_terminal(records, monkeypatch):
    store, _, run = records
    monkeypatch.setattr(runs_cmd, "interactive", lambda: True)
    p = cli("runs", "rm", run.id, "--runs-dir", str(store.runs_dir), input="n\n")
    assert p.exit_code == 1 and f"delete run {run.id} (transpose.py, 4 nodes, running) with its files?" in p.stdout
    assert "nothing done" in p.stderr and store.get_run(run.id) is not None
    p = cli("runs", "rm", run.id, "--runs-dir", str(store.runs_dir), input="y\n")
    assert p.exit_code == 0 and f"deleted run {run.id}: 4 nodes, 1 LLM calls" in p.stdout
    assert store.get_run(run.id) is None and store.llm_calls(run.id) == []


def test_runs_rm_refuses_a_run_another_run_descends_from(tmp_path):
    store = Store(tmp_path)
    a = store.create_run(problem_path="p.py", problem_hash="ph", platform="cpu", config={}, config_hash="a", budget=2)
    b = store.create_run(problem_path="p.py", problem_hash="ph", platform="cpu", config={}, config_hash="b", budget=2)
    root = store.add_node(a.id, NodeRecord("seed", "x = 1\n", "h1", {}, [], ok(1.0)), strategy_state={})
    store.add_node(b.id, NodeRecord("tune", "x = 2\n", "h2", {}, [root.id], ok(1.0)), strategy_state={})
    p = cli("runs", "rm", a.id, "--runs-dir", str(tmp_path), "--yes")
    assert p.exit_code == 2 and "1 node(s) of other runs descend from its nodes; not deleted" in p.stderr
    assert store.get_run(a.id) is not None and len(store.nodes(a.id)) == 1


def test_version():
    p = subprocess.run([sys.executable, "-m", "kernelevolve", "--version"], capture_output=True, text=True, timeout=60)
    assert p.returncode == 0 and p.stdout == f"kernelevolve {version('kernelevolve')}\n"


def test_cache_lists_and_clears_the_extension_builds(tmp_path):
    env = {"KERNELEVOLVE_CACHE": str(tmp_path / "cache")}
    extensions = tmp_path / "cache" / "extensions"
    p = cli("cache", env=env)
    assert p.exit_code == 0 and f"extension builds: none ({extensions} does not exist)" in p.stdout
    for name in ("a1", "b2", "c3"):
        (extensions / name).mkdir(parents=True)
        (extensions / name / "ext.so").write_bytes(b"\0" * 1024)
    for name in ("a1", "b2"):  # complete builds hold the build service's marker; c3 was never finished
        (extensions / name / BUILT).write_bytes(b"\0" * 1024)
    p = cli("cache", env=env)
    assert p.exit_code == 0 and f"extension builds: 2 in {extensions}, 5.0 KB\n" in p.stdout
    made, not_made = extensions / ".headers" / "h1", extensions / ".headers" / "h2"  # torch's header, per flag set
    (made / "torch").mkdir(parents=True)
    (made / "torch" / "extension.h.gch").write_bytes(b"\0" * 2048)
    not_made.mkdir()
    (not_made / "not-made.txt").write_text("the compiler said no\n")
    p = cli("cache", env=env)
    assert f"extension builds: 2 in {extensions}, 7.0 KB (of which 1 precompiled torch headers, 2.0 KB)" in p.stdout
    p = cli("cache", "clear", env=env)
    assert p.exit_code == 2 and "add --yes" in p.stderr and extensions.is_dir()
    p = cli("cache", "clear", "--yes", env=env)
    assert p.exit_code == 0 and f"removed {extensions}: 2 extension builds, 7.0 KB" in p.stdout
    assert not extensions.exists() and (tmp_path / "cache").is_dir()
    p = cli("cache", "clear", "--yes", env=env)
    assert p.exit_code == 0 and "nothing to clear" in p.stdout


def test_bench_prints_a_line_per_problem_started_and_finished_off_a_terminal(tmp_path, monkeypatch):
    for name in ("alpha", "beta"):
        (tmp_path / "suite" / name).mkdir(parents=True)
        (tmp_path / "suite" / name / "problem.py").write_text(PROBLEM.read_text())

    class NoEvaluator:
        platform = get_platform("cpu")

        def close(self):
            pass

    monkeypatch.setattr(bench_cmd, "make_pool", lambda *a, **kw: SharedPool([NoEvaluator()]))
    monkeypatch.setattr(bench_cmd, "_one", lambda item, *a, **kw: BenchRow(item.name, "ok", True, speedup_eager=2.0))
    suite, out, runs = (str(tmp_path / name) for name in ("suite", "out", "runs"))
    p = cli("bench", suite, "--no-search", "--target", "cpu", "--out", out, "--runs-dir", runs)
    assert p.exit_code == 0, p.output
    lines = [line for line in p.stderr.splitlines() if "alpha: " in line or "beta: " in line]
    assert lines == ["[1/2] alpha: started", "alpha: ok 2.00x", "[2/2] beta: started", "beta: ok 2.00x"], p.stderr
