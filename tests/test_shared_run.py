"""Several processes searching one run on a PostgreSQL store (`optimize --join`, store/agents.py): together they
store exactly the budgeted number of distinct nodes, numbered 1..budget; SQLite keeps one process per run. The
processes run the session and driver on test doubles (tests/doubles.py), so the point is the store, not timing;
one search through the real harness and the CLI against PostgreSQL is at the end."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from kernelevolve.search import session
from kernelevolve.search.session import Limits, RunSpec, SessionError
from kernelevolve.store.agents import Agent
from kernelevolve.store.store import Store
from tests.conftest import FIXTURES, ROOT
from tests.doubles import RuleEvaluator, kernel

PROBLEM = FIXTURES / "transpose.py"

# One optimize process as `optimize --resume RUN --join` runs it, with the rule evaluator for the harness.
AGENT = """
import json, sys
from pathlib import Path
from kernelevolve.search import session
from kernelevolve.search.session import Limits, RunSpec
from kernelevolve.store.store import Store
from tests.doubles import RuleEvaluator

runs, url, problem, seed, run_id, budget = sys.argv[1:7]
store = Store(Path(runs), url)
spec, limits = RunSpec(Path(problem), Path(seed)), Limits(budget=int(budget))
opened = session.open_run(store, spec, limits, run_id=run_id, join=True)
evaluator = RuleEvaluator(delay_s=0.02)
driver = session.build_driver(opened, [evaluator], warm_start=False, confirm_best=False, max_inflight=3)
reason = driver.run_search()
print(json.dumps({"reason": reason, "evaluated": len(evaluator.evaluated)}))
"""


@pytest.fixture
def seed(tmp_path):
    path = tmp_path / "seed.py"
    path.write_text(kernel(1, width=2))  # 32 settings: room for every process's steps
    return path


def _agents(tmp_path, url, seed, run_id, budget, n=2) -> list[dict]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    args = [str(tmp_path / "runs"), url, str(PROBLEM), str(seed), run_id, str(budget)]
    procs = [
        subprocess.Popen([sys.executable, "-c", AGENT, *args], cwd=ROOT, env=env, stdout=subprocess.PIPE, text=True)
        for _ in range(n)
    ]
    outs = [p.communicate(timeout=120)[0] for p in procs]
    assert all(p.returncode == 0 for p in procs), outs
    return [json.loads(out.strip().splitlines()[-1]) for out in outs]


def test_two_processes_on_one_run_store_exactly_the_budget_of_distinct_nodes(tmp_path, pg_url, seed):
    store = Store(tmp_path / "runs", pg_url)
    spec = RunSpec(PROBLEM, seed)
    opened = session.open_run(store, spec, Limits(budget=14), join=True)  # the run the processes join
    outs = _agents(tmp_path, pg_url, seed, opened.run.id, 14)
    rows = store.nodes(opened.run.id)
    assert len(rows) == 14 and len({r.source_hash for r in rows}) == 14
    assert sorted(r.step for r in rows) == list(range(1, 15))
    assert all(o["reason"] == "budget of 14 nodes reached" for o in outs), outs
    assert all(o["evaluated"] >= 2 for o in outs), outs  # both searched, not one after the other's end
    assert store.get_run(opened.run.id).status == "done"  # the last process to leave says so
    # A resume from either side, the budget raised, goes on from the shared graph.
    again = session.open_run(store, spec, Limits(budget=17), run_id=opened.run.id, join=True)
    driver = session.build_driver(again, [RuleEvaluator()], warm_start=False, confirm_best=False)
    assert driver.run_search() == "budget of 17 nodes reached"
    assert len({r.source_hash for r in store.nodes(opened.run.id)}) == 17


def test_a_claim_waits_while_other_processes_hold_the_budget_left(tmp_path, pg_url):
    """The protocol itself, one process playing two agents: claims stop at the budget; another agent's claims
    make a claim wait (they may end without a node)."""
    store = Store(tmp_path, pg_url)
    run = store.create_run(problem_path="p.py", problem_hash="ph", platform="cpu", config={}, config_hash="c", budget=3)
    a, b = Agent(store, run.id), Agent(store, run.id)
    a.join()
    b.join()
    assert [a.claim(3), a.claim(3), b.claim(3)] == ["granted", "granted", "granted"]
    assert a.claim(3) == "wait"  # three claims in flight: the budget is held, not spent
    b.release()
    assert a.claim(3) == "granted"
    assert b.claim(3) == "wait"
    assert a.next_llm_seq() == 1 and b.next_llm_seq() == 2 and a.next_llm_seq() == 3  # unique over the agents
    assert a.leave() == 1 and b.leave() == 0


def test_a_lapsed_lease_stops_counting(tmp_path, pg_url, monkeypatch):
    store = Store(tmp_path, pg_url)
    run = store.create_run(problem_path="p.py", problem_hash="ph", platform="cpu", config={}, config_hash="c", budget=2)
    gone, alive = Agent(store, run.id), Agent(store, run.id)
    gone.join()
    alive.join()
    assert gone.claim(2) == "granted" and gone.claim(2) == "granted"  # then killed: it never gives them back
    assert alive.claim(2) == "wait"
    monkeypatch.setattr("kernelevolve.store.agents.LEASE_S", -1.0)  # as if LEASE_S had passed
    assert alive.claim(2) == "granted"


def test_on_sqlite_a_killed_process_claims_hold_nothing_back(tmp_path):
    """SQLite has one searching process per run (its lock): what a killed one claimed is dropped at the next."""
    store = Store(tmp_path)
    run = store.create_run(problem_path="p.py", problem_hash="ph", platform="cpu", config={}, config_hash="c", budget=2)
    killed = Agent(store, run.id)
    killed.join()
    assert killed.claim(2) == "granted" and killed.claim(2) == "granted"
    resumed = Agent(store, run.id)
    resumed.join()
    assert resumed.claim(2) == "granted"


def test_join_needs_a_store_several_processes_write(tmp_path, seed):
    with pytest.raises(SessionError, match="--join .* needs a store they can all write: --db postgresql://"):
        session.open_run(Store(tmp_path), RunSpec(PROBLEM, seed), join=True)


def test_join_needs_a_model_that_answers_within_the_session(tmp_path, pg_url, seed):
    store = Store(tmp_path, pg_url)
    spec = RunSpec(PROBLEM, seed, llm=(f"inbox:{tmp_path / 'inbox'}",))
    opened = session.open_run(store, spec, join=True)
    with pytest.raises(SessionError, match="--join needs a model that answers within the session: inbox:"):
        with session.starting(opened):
            session.llm_operator(opened, session.LLMSettings())
    assert store.get_run(opened.run.id).status == "failed"


def test_a_second_process_on_a_postgresql_run_is_told_of_join(tmp_path, pg_url, seed):
    store = Store(tmp_path, pg_url)
    first = session.open_run(store, RunSpec(PROBLEM, seed), Limits(budget=3))
    try:
        p = subprocess.run(
            [sys.executable, "-m", "kernelevolve", "optimize", "--resume", first.run.id, "--db", pg_url]
            + ["--runs-dir", str(tmp_path)],
            capture_output=True,
            text=True,
            timeout=120,
            cwd=ROOT,
        )
    finally:
        session.run_lock.release(store.runs_dir / first.run.id)
    assert p.returncode == 2, p.stderr
    assert "is being searched by another process" in p.stderr and "add --join" in p.stderr


SEED = """import torch
import torch.nn as nn

TILE = 64
TUNABLES = {"TILE": [16, 32, 64, 128]}


class ModelNew(nn.Module):
    def forward(self, x):
        return torch.cat([x[:, i : i + TILE].t() for i in range(0, x.shape[1], TILE)]).contiguous()
"""


def test_a_search_through_the_harness_and_every_command_on_postgresql(tmp_path, pg_url):
    """optimize, a second process joining it (--resume --join), runs, show, export and report, on one
    PostgreSQL store, the evaluations through the real harness on the cpu target."""
    from typer.testing import CliRunner

    from kernelevolve.cli import app

    problem = tmp_path / "transpose_small.py"
    problem.write_text(
        PROBLEM.read_text().replace("N = 2048", "N = 256").replace('"N": 2048}, {"N": 1000', '"N": 256}, {"N": 100')
    )
    seed = tmp_path / "seed.py"
    seed.write_text(SEED)
    where = ["--db", pg_url, "--runs-dir", str(tmp_path / "runs")]
    cli = CliRunner()
    common = ["--target", "cpu", "--trials", "1", "--no-compile-baseline", "--json", *where]
    first = cli.invoke(app, ["optimize", str(problem), "--seed", str(seed), "--budget", "2", *common])
    assert first.exit_code == 0, first.output
    run = json.loads(first.stdout)["run"]
    joined = cli.invoke(app, ["optimize", "--resume", run, "--join", "--budget", "3", *common])
    assert joined.exit_code == 0, joined.output
    out = json.loads(joined.stdout)
    assert out["evaluations"] == 3 and out["stop_reason"] == "budget of 3 nodes reached" and out["seed_fitness"] > 0
    store = Store(tmp_path / "runs", pg_url)
    assert [r.step for r in store.nodes(run)] == [1, 2, 3] and store.get_run(run).status == "done"
    listed = cli.invoke(app, ["runs", *where])
    assert listed.exit_code == 0 and run in listed.stdout
    shown = cli.invoke(app, ["show", run, "--all", *where])
    assert shown.exit_code == 0 and "all 3 nodes" in shown.stdout
    exported = cli.invoke(app, ["export", run, "--out", str(tmp_path / "fast.py"), *where])
    assert exported.exit_code == 0 and "_DISPATCH" in (tmp_path / "fast.py").read_text()
    report = cli.invoke(app, ["report", run, "--out", str(tmp_path / "r.html"), *where])
    assert report.exit_code == 0 and run in (tmp_path / "r.html").read_text()


def test_a_process_on_another_machine_joins_with_no_shared_runs_directory(tmp_path, pg_url, seed):
    """Machine A starts the run with its own runs directory and problem file; machine B has neither: it joins
    through the database alone (store/artifacts.py), reads A's kernels, prompts and results from it and goes on."""
    machine_a = tmp_path / "a"
    machine_a.mkdir()
    problem = machine_a / "problem.py"
    problem.write_text(PROBLEM.read_text())
    store_a = Store(machine_a / "runs", pg_url)
    opened = session.open_run(store_a, RunSpec(problem, seed), Limits(budget=4))
    driver = session.build_driver(opened, [RuleEvaluator()], warm_start=False, confirm_best=False)
    assert driver.run_search() == "budget of 4 nodes reached"
    run_id, a_nodes = opened.run.id, {n.source_hash for n in store_a.nodes(opened.run.id)}
    shutil.rmtree(machine_a)  # nothing of A's files reaches B

    store_b = Store(tmp_path / "b" / "runs", pg_url)
    spec = session.stored_spec(store_b, run_id)
    assert spec.problem == store_b.path(f"{run_id}/problem.py") and spec.problem.read_text() == PROBLEM.read_text()
    joined = session.open_run(store_b, spec, Limits(budget=7), run_id=run_id, join=True)
    driver = session.build_driver(joined, [RuleEvaluator()], warm_start=False, confirm_best=False)
    assert driver.run_search() == "budget of 7 nodes reached"
    rows = store_b.nodes(run_id)
    assert len({r.source_hash for r in rows}) == 7 and a_nodes <= {r.source_hash for r in rows}
    first = next(r for r in rows if r.step == 1)
    assert store_b.source(first.id) == seed.read_text()  # A's seed, read from the database
    assert store_b.path(first.kernel_path).is_file()  # and written under B's runs directory for the next reader
    assert json.loads(store_b.read(str(Path(first.kernel_path).parent / "result.json")))["status"]
    # The run's config still names the problem's path on A, where A's processes find it.
    assert json.loads(store_b.get_run(run_id).config)["problem"] == str(problem)


def test_an_artifact_missing_here_is_read_from_the_store(tmp_path, store_url, seed):
    """On either store a file gone from the runs directory is served from its row (and written back); a read-only
    store serves it without writing."""
    store = Store(tmp_path / "runs", store_url)
    opened = session.open_run(store, RunSpec(PROBLEM, seed), Limits(budget=1))
    session.build_driver(opened, [RuleEvaluator()], warm_start=False, confirm_best=False).run_search()
    node = store.nodes(opened.run.id)[0]
    store.path(node.kernel_path).unlink()
    if store_url is None:
        viewer = Store(tmp_path / "runs", read_only=True)
        assert viewer.read(node.kernel_path) == seed.read_text()
        assert not store.path(node.kernel_path).exists()  # the viewer wrote nothing
    assert store.read(node.kernel_path) == seed.read_text()
    assert store.path(node.kernel_path).read_text() == seed.read_text()
    with pytest.raises(FileNotFoundError):
        store.read(f"{opened.run.id}/nodes/none/kernel.py")
