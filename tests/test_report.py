"""Issue 20: the report's data, read from a recorded run (tests/recorded_run.py, searched in-process on the test
doubles), the HTML it renders, `report` for runs and bench folders, `optimize --report`, bench's report, and the
live view's routes and errors (in-process, over HTTP on 127.0.0.1). No browser: tests/test_report_browser.py."""

from __future__ import annotations

import hashlib
import json
import os
import re
import socket
import threading
import urllib.error
import urllib.request
from dataclasses import asdict
from pathlib import Path

import pytest
from typer.testing import CliRunner

from kernelevolve.cli import app, bench_cmd, search_cmd
from kernelevolve.eval.service.pool import SharedPool
from kernelevolve.platforms import get_platform
from kernelevolve.report import html
from kernelevolve.report.bench import bench_data
from kernelevolve.report.data import KINDS, clean, run_data
from kernelevolve.report.layout import tree_layout
from kernelevolve.report.serve import bind, create_app, server, url_of
from kernelevolve.result import EvalResult, Status
from kernelevolve.search import session
from kernelevolve.search.export import choose
from kernelevolve.search.session import Limits, RunSpec
from kernelevolve.store.store import LLMCallRecord, NodeRecord, Store, StoreError
from kernelevolve.suites.bench import BenchRow, fast_p, hbm_rule, roofline_rule
from tests.doubles import kernel
from tests.recorded_run import ANSWERS, PROBLEM, SHAPES, CasesEvaluator, record

WIDE = {"COLUMNS": "200"}


def cli(*args: str):
    return CliRunner().invoke(app, list(args), env=WIDE)


@pytest.fixture(scope="module")
def recorded(tmp_path_factory):
    """The recorded run, searched once per test process; tests only read it."""
    runs = tmp_path_factory.mktemp("recorded") / "runs"
    store, run_id = record(runs)
    return store, store.get_run(run_id)


@pytest.fixture(scope="module")
def data(recorded):
    store, run = recorded
    return run_data(store, run)


def db_digest(runs: Path) -> str:
    return hashlib.sha256((runs / "kernelevolve.db").read_bytes()).hexdigest()


def test_every_kind_of_step_and_failure_is_there_with_its_parents(data):
    nodes = data["nodes"]
    kinds = {n["kind"] for n in nodes}
    assert {"seed", "draft", "refine", "debug", "tune", "crossover"} <= kinds <= set(KINDS)
    assert {"compile_error", "incorrect", "rejected"} <= set(data["statuses"])
    assert sum(data["statuses"].values()) == len(nodes) == len({n["step"] for n in nodes})
    steps = {n["step"]: n for n in nodes}
    for n in nodes:
        assert all(p in steps and p < n["step"] for p in n["parents"])
        if n["kind"] == "crossover":
            assert len(n["parents"]) == 2
        if n["kind"] == "debug":  # the model's step on a failed parent
            assert not steps[n["parents"][0]]["correct"]
        if n["kind"] == "refine":
            assert steps[n["parents"][0]]["correct"]
        if n["kind"] in ("seed", "draft"):
            assert n["parents"] == []
        if not n["correct"]:
            assert n["reason"]


def test_best_so_far_is_the_running_best_and_the_best_its_end(data):
    nodes = data["nodes"]
    running = None
    for n in nodes:
        if n["correct"] and n["fitness"] is not None:
            running = max(running or 0.0, n["fitness"])
        assert n["best_so_far"] == running
    best = data["best"]
    top = max(n["fitness"] for n in nodes if n["correct"])
    assert best["fitness"] == top and best["step"] == min(n["step"] for n in nodes if n["fitness"] == top)
    steps = {n["step"]: n for n in nodes}
    lineage = best["lineage"]
    assert lineage[0] == best["step"] and steps[lineage[-1]]["parents"] == []
    assert all(steps[a]["parents"][0] == b for a, b in zip(lineage, lineage[1:]))
    times = [n["t_s"] for n in nodes]
    assert times == sorted(times) and times[0] >= 0  # committed in step order, from the run's start


def test_the_graph_layout_puts_parents_over_their_children():
    # 1 -> 2 -> (4, 5); 1 -> 3; 6 is a second root; 7 crosses 4 and 3 (laid out under 4, its first parent)
    nodes = [(1, []), (2, [1]), (3, [1]), (4, [2]), (5, [2]), (6, []), (7, [4, 3]), (8, [99])]
    at = tree_layout(nodes)
    assert {k: d for k, (_, d) in at.items()} == {1: 0, 2: 1, 3: 1, 4: 2, 5: 2, 6: 0, 7: 3, 8: 0}
    assert at[2][0] == (at[4][0] + at[5][0]) / 2 and at[1][0] == (at[2][0] + at[3][0]) / 2
    leaves = [at[k][0] for k in (7, 5, 3, 6, 8)]
    assert leaves == sorted(leaves) and len(set(leaves)) == 5  # a column each, in the order they hang
    chain = tree_layout([(i, [i - 1] if i else []) for i in range(5000)])  # a greedy chain: no recursion limit
    assert chain[4999] == (0.0, 4999)


def test_the_graph_data_places_every_node_under_its_first_parent(data):
    steps = {n["step"]: n for n in data["nodes"]}
    for n in data["nodes"]:
        depth = steps[n["parents"][0]]["depth"] + 1 if n["parents"] else 0
        assert n["depth"] == depth
    assert len({(n["x"], n["depth"]) for n in data["nodes"]}) == len(data["nodes"])  # nothing drawn twice


def test_cases_show_the_best_kernel_and_which_kernel_the_export_serves_each_with(recorded, data):
    store, run = recorded
    cases = data["cases"]
    assert [c["shape"] for c in cases] == list(SHAPES)
    best = data["best"]
    for c in cases:
        timing = c["best"]
        assert timing["speedup_eager"] == pytest.approx(timing["t_eager_ms"] / timing["t_candidate_ms"])
        assert timing["speedup_compile"] == pytest.approx(timing["t_compile_ms"] / timing["t_candidate_ms"])
        assert timing["t_roofline_ms"] > 0 and timing["t_copy_ms"] > 0
    step = {n.id: n.step for n in store.nodes(run.id)}
    exported = [step.get(c.node) for c in choose(store, run)]  # what `export` writes, shape by shape
    assert [c["export"]["node"] if c["export"] else None for c in cases] == exported
    assert exported[0] is None and exported[2] == best["step"]  # case 0: no kernel beat eager, the reference


def test_llm_accounting_counts_calls_tokens_and_what_the_answers_became(recorded, data):
    store, run = recorded
    llm = data["llm"]
    calls = store.llm_calls(run.id)
    (model,) = llm["models"]
    assert model["model"] == "scripted:m" and model["calls"] == len(calls)
    assert model["prompt_tokens"] == 1200 * len(calls) and llm["tokens"] == 1500 * len(calls)
    a = llm["answers"]
    unusable = sum(c["outcome"] == "unusable" for c in calls)
    assert unusable >= 1 and a["parsed"] == a["answered"] - unusable == len(calls) - unusable
    model_nodes = [n for n in data["nodes"] if n["kind"] in ("draft", "refine", "debug")]
    evaluated = [n for n in model_nodes if not n["reason"].startswith("unusable response")]
    assert a["evaluated"] == len(evaluated) and a["correct"] == sum(n["correct"] for n in evaluated)
    assert a["compiled"] == sum(n["status"] != "compile_error" for n in evaluated) < a["evaluated"]
    assert a["duplicates"] == sum(c["outcome"] == "duplicate" for c in calls) and a["pending"] == 0


def test_a_node_record_holds_source_diff_evaluation_analysis_documents_prompt_and_answer(recorded, data):
    store, run = recorded
    debug = next(n for n in data["nodes"] if n["kind"] == "debug")
    d = data["details"][str(debug["step"])]
    row = store.node_by_step(run.id, debug["step"])
    assert d["source"] == store.path(row.kernel_path).read_text() and "# debugged" in d["source"]
    (diff,) = d["diffs"]
    assert diff["parent"] == debug["parents"][0] and "\n-BROKEN = 2\n+# debugged\n" in diff["text"]
    assert [c["shape"] for c in d["evaluation"]["cases"]] == list(SHAPES)
    assert d["evaluation"]["cases"][2]["speedup_compile"] == pytest.approx(
        0.9 * d["evaluation"]["cases"][2]["speedup_eager"]
    )
    assert d["analysis"]["status"] == "ok" and d["analysis"]["strategy"]
    knowledge = Path(__file__).resolve().parents[1] / "kernelevolve" / "knowledge"
    assert d["knowledge"] and all((knowledge / doc).is_file() for doc in d["knowledge"])
    call = store.llm_call_of(row.id)
    assert d["llm_call"]["prompt"] == store.path(call["prompt_path"]).read_text()
    assert d["llm_call"]["answer"] == ANSWERS[4] and d["llm_call"]["model"] == "scripted:m"
    broken = next(n for n in data["nodes"] if n["status"] == "compile_error")
    f = data["details"][str(broken["step"])]
    assert f["evaluation"]["reason"] == "scripted compile_error: BROKEN" and f["reason"] == f["evaluation"]["reason"]
    seed = data["details"]["1"]
    assert seed["llm_call"] is None and seed["diffs"] == [] and seed["knowledge"] == []


def test_the_page_inlines_plotly_and_its_data_and_nothing_can_end_a_script_early(recorded):
    store, run = recorded
    data = run_data(store, run)
    data["details"]["1"]["source"] = "</script><script>alert(1)</script> <!-- and a NaN:"
    data["details"]["1"]["fitness"] = float("nan")
    page = html.render_run(data)
    assert "<script src" not in page  # nothing fetched to open it
    assert page.count("</script>") == 5  # plotly, the two JSON blocks, common.js, run.js and nothing else
    blob = page.split('<script id="report-data" type="application/json">')[1].split("</script>")[0]
    parsed = json.loads(blob)
    assert (
        parsed["details"]["1"]["source"].startswith("</script><script>") and parsed["details"]["1"]["fitness"] is None
    )
    assert clean({"a": [float("inf"), 1.0]}) == {"a": [None, 1.0]}


def test_report_writes_one_file_beside_the_run_and_reads_the_store_only(recorded, tmp_path):
    store, run = recorded
    before = db_digest(store.runs_dir)
    p = cli("report", run.id[:-2], "--runs-dir", str(store.runs_dir))  # a prefix of the id
    assert p.exit_code == 0, p.output
    out = store.runs_dir / run.id / "report.html"
    assert f"wrote {out}" in p.stderr and out.stat().st_size > 1_000_000  # plotly's JavaScript is inside
    text = out.read_text()
    assert f"run {run.id}" in text and "Plotly" in text and '"kind":"crossover"' in text
    assert db_digest(store.runs_dir) == before
    mine = tmp_path / "deep" / "mine.html"
    assert cli("report", run.id, "--runs-dir", str(store.runs_dir), "--out", str(mine)).exit_code == 0
    assert mine.is_file()


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["nope"], "no run 'nope' in"),
        (["--runs-dir", "{tmp}/missing", "x"], "no runs directory {tmp}/missing"),
        (["{tmp}"], "is a folder without results.json"),
        (["{tmp}/bench/out"], "{tmp}/bench/out: no such folder; give a `kernelevolve bench` output folder or a run id"),
        (["RUN", "--out", "{tmp}"], "is a folder: give the file to write"),
    ],
)
def test_report_errors_are_one_line_and_exit_2(recorded, tmp_path, args, message):
    store, run = recorded
    args = [a.replace("{tmp}", str(tmp_path)).replace("RUN", run.id) for a in args]
    if "--runs-dir" not in args:
        args += ["--runs-dir", str(store.runs_dir)]
    p = cli("report", *args)
    assert p.exit_code == 2 and message.replace("{tmp}", str(tmp_path)) in p.stderr, p.output


def bench_results(run_id: str) -> dict:
    """A bench output's results.json: a searched row with its run (and the exported module's measured cases), a
    row whose run is not in the store, one that failed."""
    cases = [
        {
            "shape": {"N": 4096},
            "correct": True,
            "speedup_eager": 2.5,
            "speedup_compile": 2.2,
            "t_candidate_ms": 0.036,
            "t_eager_ms": 0.09,
            "t_compile_ms": 0.08,
            "t_roofline_ms": 0.006,
            "t_copy_ms": 0.012,
            "memory_bound": True,
            "t_bytes_ms": 0.007,
        }
    ]
    rows = [
        BenchRow("transpose", "ok", True, 2.5, 2.2, cases, 0.16, run=run_id, kernel="exports/transpose.py"),
        BenchRow("elsewhere", "ok", True, 1.2, 0.9, [dict(cases[0], t_compile_ms=0.2)], run="20990101-000000-abcdef"),
        BenchRow("broken", "compile_error", False, reason="error: expected ';'"),
    ]
    rows[0].target = {"speedup": 3.0, "case": 0, "note": "a paper", "shape": {"N": 4096}, "measured": 2.5, "met": False}
    rows[0].review = ["speedup 12x exceeds 10x: review before trusting it"]
    return {"suite": "mini", "target": "cpu", "date": "2026-12-01 10:00", "rows": [asdict(r) for r in rows]}


def test_bench_report_charts_the_tables_and_links_each_run_report(recorded, tmp_path):
    store, run = recorded
    out = tmp_path / "bench"
    out.mkdir()
    results = bench_results(run.id)
    (out / "results.json").write_text(json.dumps({**results, "runs_dir": str(store.runs_dir)}))
    p = cli("report", str(out))  # the runs directory named in results.json: no --runs-dir needed
    assert p.exit_code == 0, p.output
    assert "note: elsewhere: run 20990101-000000-abcdef is not in the store" in p.stderr
    page = (out / "report.html").read_text()
    assert '"report":"reports/transpose.html"' in page and '"report":null' in page
    run_page = (out / "reports" / "transpose.html").read_text()
    blob = json.loads(run_page.split('type="application/json">')[1].split("</script>")[0])
    assert blob["run"]["id"] == run.id and blob["cases"][0]["exported"]["t_copy_ms"] == 0.012
    rows = [BenchRow(**r) for r in results["rows"]]
    d = bench_data(results, {"transpose": "reports/transpose.html"})
    assert d["fast_p"]["eager"] == [fast_p(rows, p) for p in (1.0, 1.5, 2.0)] == [2 / 3, 1 / 3, 1 / 3]
    assert d["fast_p"]["compile"] == [fast_p(rows, p, "speedup_compile") for p in (1.0, 1.5, 2.0)]
    assert d["roofline_rule"]["cases"] == roofline_rule(rows) and len(d["roofline_rule"]["cases"]) == 2
    assert d["hbm_rule"]["cases"] == hbm_rule(rows) and d["targets"][0]["problem"] == "transpose"
    assert [r["report"] for r in d["rows"]] == ["reports/transpose.html", None, None]


def test_optimize_report_writes_the_report_when_the_run_ends(tmp_path, monkeypatch):
    monkeypatch.setattr(search_cmd, "make_pool", lambda *a, **kw: SharedPool([CasesEvaluator()]))
    seed = tmp_path / "seed.py"
    seed.write_text(kernel(1))
    runs = tmp_path / "runs"
    p = cli(
        "optimize",
        str(PROBLEM),
        "--seed",
        str(seed),
        "--target",
        "cpu",
        "--budget",
        "3",
        "--runs-dir",
        str(runs),
        "--report",
        "--json",
    )
    assert p.exit_code == 0, p.output
    run_id = json.loads(p.stdout)["run"]
    out = runs / run_id / "report.html"
    assert f"wrote the report {out}" in p.stderr and '"step":3' in out.read_text()


def test_bench_writes_its_report_beside_results_md_with_each_run_report(recorded, tmp_path, monkeypatch):
    store, run = recorded
    (tmp_path / "suite" / "transpose").mkdir(parents=True)
    (tmp_path / "suite" / "transpose" / "problem.py").write_text(PROBLEM.read_text())
    (tmp_path / "suite" / "transpose" / "seed.py").write_text(kernel(1))

    class NoEvaluator:
        platform = get_platform("cpu")

        def close(self):
            pass

    row = BenchRow(**bench_results(run.id)["rows"][0])
    monkeypatch.setattr(bench_cmd, "make_pool", lambda *a, **kw: SharedPool([NoEvaluator()]))
    monkeypatch.setattr(bench_cmd, "_one", lambda item, *a, **kw: row)
    out = tmp_path / "out"
    p = cli("bench", str(tmp_path / "suite"), "--target", "cpu", "--out", str(out), "--runs-dir", str(store.runs_dir))
    assert p.exit_code == 0, p.output
    assert f"{out / 'results.md'} and {out / 'report.html'}" in p.stderr
    assert json.loads((out / "results.json").read_text())["runs_dir"] == str(store.runs_dir.resolve())
    assert (out / "reports" / "transpose.html").is_file()
    assert '"report":"reports/transpose.html"' in (out / "report.html").read_text()
    # One plotly for the folder's pages, loaded from beside them: each page stays small and opens offline.
    shared = out / "reports" / "plotly.min.js"
    assert shared.stat().st_size > 1_000_000
    assert '<script src="plotly.min.js">' in (out / "reports" / "transpose.html").read_text()
    assert '<script src="reports/plotly.min.js">' in (out / "report.html").read_text()
    assert (out / "report.html").stat().st_size < shared.stat().st_size / 4


def test_a_store_opened_read_only_refuses_writes_creates_nothing_and_sees_new_commits(tmp_path):
    runs = tmp_path / "runs"
    with pytest.raises(StoreError, match=f"no runs directory {runs}"):
        Store(runs, read_only=True)
    assert not runs.exists()
    runs.mkdir()
    with pytest.raises(StoreError, match="holds no store"):
        Store(runs, read_only=True)
    assert list(runs.iterdir()) == []
    writer = Store(runs)
    run = writer.create_run(
        problem_path=str(PROBLEM), problem_hash="ph", platform="cpu", config={}, config_hash="c", budget=3
    )
    for url in (None, f"sqlite:///{runs / 'kernelevolve.db'}"):
        reader = Store(runs, url, read_only=True)
        with pytest.raises(StoreError, match="read-only"):
            reader.create_run(problem_path="p", problem_hash="h", platform="cpu", config={}, config_hash="d", budget=1)
        with pytest.raises(StoreError, match="read-only"):
            reader.add_llm_call(run.id, LLMCallRecord(1, "m", [], "prompt", "answer"))
        before = len(reader.nodes(run.id))
        writer.add_node(
            run.id,
            NodeRecord("seed", kernel(before + 1), f"h{before}", {}, [], EvalResult(status=Status.OK, correct=True)),
            strategy_state={},
        )
        assert len(reader.nodes(run.id)) == before + 1  # the writer's commit, seen without reopening
    with pytest.raises(StoreError, match="holds no store"):
        Store(runs, f"sqlite:///{tmp_path / 'empty.db'}", read_only=True)


@pytest.fixture
def served(recorded):
    """The live view of the recorded store, served in a thread on a free port of 127.0.0.1."""
    store, run = recorded
    reader = Store(store.runs_dir, read_only=True)
    sock = bind("127.0.0.1", 0)
    running = server(create_app(reader, refresh_s=0.5))
    thread = threading.Thread(target=running.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    url = url_of(sock)
    for _ in range(100):
        if running.started:
            break
        threading.Event().wait(0.05)
    yield url, store, run
    running.should_exit = True
    thread.join(10)
    sock.close()


def get(url: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(url, timeout=10) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()


def test_the_live_view_serves_pages_and_their_data_and_says_what_is_missing(served):
    url, store, run = served
    before = db_digest(store.runs_dir)
    status, page = get(url)
    assert status == 200 and run.id in page and '<script src="/static/plotly.js">' in page
    status, runs = get(url + "api/runs")
    listed = json.loads(runs)["runs"]
    assert status == 200 and [r["id"] for r in listed] == [run.id] and listed[0]["url"] == f"/run/{run.id}"
    status, page = get(url + f"run/{run.id}")
    assert status == 200 and '"node_url":"/api/run/' in page and '"details":{}' in page  # records come on request
    status, body = get(url + f"api/run/{run.id}")
    data = json.loads(body)
    assert status == 200 and len(data["nodes"]) == len(store.nodes(run.id)) and data["version"]
    status, body = get(url + f"api/run/{run.id}/node/2")
    assert status == 200 and json.loads(body)["source"] == store.source(store.node_by_step(run.id, 2).id)
    status, body = get(url + "run/nope")
    assert status == 404 and "No run nope in" in body
    status, body = get(url + f"api/run/{run.id}/node/999")
    assert status == 404 and json.loads(body)["error"] == f"no node 999 in run {run.id!r}"
    status, body = get(url + "static/plotly.js")
    assert status == 200 and len(body) > 1_000_000
    assert get(url + "favicon.ico")[0] == 204
    assert db_digest(store.runs_dir) == before  # read-only


def test_serve_says_why_it_cannot_start(tmp_path):
    p = cli("serve", "--runs-dir", str(tmp_path / "missing"))
    assert p.exit_code == 2 and f"no runs directory {tmp_path / 'missing'}" in p.stderr
    Store(tmp_path / "runs")
    taken = socket.socket()
    taken.bind(("127.0.0.1", 0))
    taken.listen(1)
    port = taken.getsockname()[1]
    try:
        p = cli("serve", "--runs-dir", str(tmp_path / "runs"), "--port", str(port))
    finally:
        taken.close()
    assert p.exit_code == 2 and re.search(rf"port {port} on 127.0.0.1 is in use .*--port 0", p.stderr), p.stderr


POSTGRES = os.environ.get("KERNELEVOLVE_TEST_POSTGRES")  # e.g. postgresql+psycopg://postgres@127.0.0.1/ke


@pytest.mark.skipif(not POSTGRES, reason="set KERNELEVOLVE_TEST_POSTGRES to a PostgreSQL URL the test may write to")
def test_the_report_and_the_live_view_read_a_postgresql_store_and_the_server_refuses_writes(tmp_path):
    from sqlalchemy import text

    seed = tmp_path / "seed.py"
    seed.write_text(kernel(1))
    writer = Store(tmp_path / "runs", POSTGRES)
    opened = session.open_run(writer, RunSpec(PROBLEM, seed, trials=1), Limits(budget=4))
    driver = session.build_driver(opened, [CasesEvaluator()], warm_start=False, confirm_best=False)
    session.finish(opened, driver.run_search())
    reader = Store(tmp_path / "runs", POSTGRES, read_only=True)
    data = run_data(reader, reader.get_run(opened.run.id))
    assert len(data["nodes"]) == 4 and data["details"]["2"]["source"] == seed.read_text().replace(
        "TILE = 1", "TILE = 2"
    )
    with pytest.raises(Exception, match="read-only transaction"), reader.engine.begin() as c:
        c.execute(text("UPDATE runs SET status = 'x'"))  # past the Store's own check: the server refuses
    p = cli(
        "report",
        opened.run.id,
        "--runs-dir",
        str(tmp_path / "runs"),
        "--db",
        POSTGRES,
        "--out",
        str(tmp_path / "r.html"),
    )
    assert p.exit_code == 0, p.output
