"""Errors a user can meet end as one line that says what is wrong and what to do, with exit status 2, never a
traceback (issue 16, items 8 and 9): export's --out, a database URL whose driver is missing, a full disk, a
read-only or unreadable runs directory, messages carrying user or LLM text (no emoji, no markup), the URL an LLM
call failed at, and --dry-run without an API key.

Runs are built with the store API; nothing is compiled. Running as root, a read-only directory is still writable,
so the read-only cases make `os.access` say the runs directory is not writable (the test that SQLite really opened
read-only writes through the engine and is refused); a full disk is simulated by an OSError(ENOSPC) or by SQLite's
max_page_count, which fails a write exactly as a full disk does ("database or disk is full").
"""

from __future__ import annotations

import errno
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest
from sqlalchemy import event, text
from sqlalchemy.exc import OperationalError
from typer.testing import CliRunner

from kernelevolve.cli import app
from kernelevolve.llm.base import LLMError, Message
from kernelevolve.llm.providers import RetryPolicy
from kernelevolve.llm.registry import make_client
from kernelevolve.problem.problem import load_problem
from kernelevolve.result import EvalResult, Status
from kernelevolve.store.store import NodeRecord, Store, StoreError
from tests.conftest import CANDIDATES, FIXTURES

PROBLEM = FIXTURES / "kb_relu.py"
SEED = CANDIDATES / "relu_ok.py"
FAST_RETRY = RetryPolicy(attempts=2, initial_s=0.01, max_s=0.02)


def _stored_run(runs: Path) -> str:
    store = Store(runs)
    problem = load_problem(PROBLEM)
    run = store.create_run(
        problem_path=str(problem.path),
        problem_hash=problem.hash,
        platform="cpu",
        config={"strategy": "greedy"},
        config_hash="c",
        budget=2,
    )
    result = EvalResult(status=Status.OK, correct=True, speedup=1.0, fitness=1.0)
    store.add_node(run.id, NodeRecord("seed", "x = 1\n", "h1", {}, [], result), strategy_state={})
    store.engine.dispose()
    return run.id


def _cli(*args: object):
    return CliRunner().invoke(app, [str(a) for a in args])


def _error_line(result) -> str:
    """The one error line the command ended with (exit status 2, no traceback)."""
    assert result.exit_code == 2, (result.exit_code, result.stdout, result.stderr, result.exception)
    assert "Traceback" not in result.stdout + result.stderr
    last = result.stderr.strip().splitlines()[-1]
    assert last.startswith("error: "), result.stderr
    return last


def _python(*args: object, env: dict[str, str] | None = None, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "kernelevolve", *map(str, args)],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=env,
    )


def _one_error_line(p: subprocess.CompletedProcess) -> str:
    assert p.returncode == 2, (p.returncode, p.stdout, p.stderr)
    assert "Traceback" not in p.stderr
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), p.stderr
    return lines[0]


# ---- export --out ----


def test_export_creates_a_missing_folder(tmp_path):
    run = _stored_run(tmp_path / "runs")
    out = tmp_path / "new" / "deeper" / "relu.py"
    r = _cli("export", run, "--out", out, "--runs-dir", tmp_path / "runs")
    assert r.exit_code == 0, (r.stderr, r.exception)
    assert "class ModelNew" in out.read_text() and f"wrote {out}" in r.stderr


def test_export_onto_a_folder_is_refused(tmp_path):
    run = _stored_run(tmp_path / "runs")
    line = _error_line(_cli("export", run, "--out", tmp_path, "--runs-dir", tmp_path / "runs"))
    assert f"--out {tmp_path} is a folder: give the file to write, e.g. --out {tmp_path / 'kb_relu_export.py'}" in line


def test_export_to_a_path_that_cannot_be_written(tmp_path, monkeypatch):
    run = _stored_run(tmp_path / "runs")
    (tmp_path / "a_file").write_text("")
    line = _error_line(_cli("export", run, "--out", tmp_path / "a_file" / "m.py", "--runs-dir", tmp_path / "runs"))
    assert f"cannot create the folder {tmp_path / 'a_file'} for --out" in line and "choose another --out" in line

    write_text = Path.write_text

    def refuse(self, *args, **kwargs):
        if self.name in ("denied.py", "full.py"):
            code = errno.EACCES if self.name == "denied.py" else errno.ENOSPC
            raise OSError(code, os.strerror(code), str(self))
        return write_text(self, *args, **kwargs)

    monkeypatch.setattr(Path, "write_text", refuse)
    line = _error_line(_cli("export", run, "--out", tmp_path / "denied.py", "--runs-dir", tmp_path / "runs"))
    assert line.endswith(
        f"cannot write --out {tmp_path / 'denied.py'}: permission denied; choose an --out path you can write"
    )
    line = _error_line(_cli("export", run, "--out", tmp_path / "full.py", "--runs-dir", tmp_path / "runs"))
    assert "the disk is full (no space left on device)" in line


# ---- --db postgresql:// without psycopg ----


def test_postgresql_url_without_psycopg_names_the_package(tmp_path):
    """Where psycopg is installed (CI installs the postgres extra), the commands run with its import blocked."""
    blocker = tmp_path / "no-psycopg"
    blocker.mkdir()
    (blocker / "sitecustomize.py").write_text("import sys\nsys.modules['psycopg'] = None  # import psycopg fails\n")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(blocker), os.environ.get("PYTHONPATH", "")])}
    url = "postgresql://user:secret@localhost/kernelevolve"
    for args in (["runs"], ["show", "somerun"], ["optimize", PROBLEM, "--seed", SEED, "--target", "cpu"]):
        line = _one_error_line(_python(*args, "--db", url, "--runs-dir", tmp_path, env=env))
        assert line == (
            "error: the store URL postgresql://user:***@localhost/kernelevolve needs the Python package "
            "'psycopg[binary]', which is not installed: pip install \"psycopg[binary]\""
        )


def test_bench_opens_the_store_db_names_and_says_why_it_cannot(tmp_path):
    """bench takes --db as optimize does; a server that refuses is one line, its password hidden."""
    pytest.importorskip("psycopg", reason="needs psycopg: pip install -e '.[postgres]'")
    url = "postgresql://user:secret@127.0.0.1:1/kernelevolve"  # port 1: nothing listens
    args = ["bench", "ranking", "--no-search", "--target", "cpu", "--out", tmp_path / "out", "--db", url]
    line = _error_line(_cli(*args, "--runs-dir", tmp_path / "runs"))
    assert line.startswith("error: cannot open the store at postgresql://user:***@127.0.0.1:1/kernelevolve: ")
    assert "secret" not in line


# ---- a full disk ----


def test_full_disk_while_writing_artifacts_is_a_store_error(tmp_path, monkeypatch):
    store = Store(tmp_path)
    run = store.create_run(problem_path="p.py", problem_hash="ph", platform="cpu", config={}, config_hash="c", budget=2)
    write_text = Path.write_text

    def full(self, *args, **kwargs):
        if self.name == "kernel.py":
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(self))
        return write_text(self, *args, **kwargs)

    monkeypatch.setattr(Path, "write_text", full)
    result = EvalResult(status=Status.OK, correct=True, speedup=1.0, fitness=1.0)
    with pytest.raises(
        StoreError, match=r"cannot write artifacts under .*: the disk is full \(no space left on device\)"
    ):
        store.add_node(run.id, NodeRecord("seed", "x = 1\n", "h1", {}, [], result), strategy_state={})
    assert store.nodes(run.id) == []


def test_full_database_is_a_store_error(tmp_path):
    store = Store(tmp_path)
    run = store.create_run(problem_path="p.py", problem_hash="ph", platform="cpu", config={}, config_hash="c", budget=2)
    store.engine.dispose()
    # SQLite refuses to grow the file past max_page_count (never below its size) with SQLITE_FULL, as on a full disk.
    event.listen(store.engine, "connect", lambda connection, _: connection.execute("PRAGMA max_page_count=1"))
    result = EvalResult(status=Status.OK, correct=True, speedup=1.0, fitness=1.0, log_tail="x" * 200_000)
    with pytest.raises(StoreError) as caught:
        store.add_node(run.id, NodeRecord("seed", "x = 1\n", "h1", {}, [], result), strategy_state={})
    message = str(caught.value)
    assert message.startswith(f"cannot write a node of run {run.id} to the store at sqlite:///")
    assert "database or disk is full; free some space and run the command again" in message
    assert "sqlalche.me" not in message and "\n" not in message


def test_optimize_on_a_full_disk_ends_with_one_line(tmp_path, monkeypatch):
    write_text = Path.write_text

    def full(self, *args, **kwargs):
        if self.name == "kernel.py" and self.parent.parent.name == "nodes":
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(self))
        return write_text(self, *args, **kwargs)

    monkeypatch.setattr(Path, "write_text", full)
    r = _cli("optimize", PROBLEM, "--seed", SEED, "--target", "cpu", "--runs-dir", tmp_path, "--trials", "1")
    line = _error_line(r)
    assert "cannot write artifacts under" in line and "the disk is full (no space left on device)" in line
    store = Store(tmp_path)
    assert [run.status for run, _, _ in store.runs()] == ["interrupted"]


# ---- read-only and unreadable runs directories ----


@pytest.fixture
def not_writable(monkeypatch):
    """Make os.access say these folders cannot be written (root can write anywhere)."""
    folders: set[str] = set()
    access = os.access

    def fake(path, mode, *args, **kwargs):
        if mode & os.W_OK and os.path.realpath(path) in folders:
            return False
        return access(path, mode, *args, **kwargs)

    monkeypatch.setattr(os, "access", fake)
    return lambda folder: folders.add(os.path.realpath(folder))


def test_read_only_runs_dir_lists_and_shows_but_refuses_writes(tmp_path, not_writable):
    runs = tmp_path / "runs"
    run = _stored_run(runs)
    not_writable(runs)
    store = Store(runs)
    assert store.read_only == f"{runs} is not writable"
    with pytest.raises(OperationalError, match="readonly database"):  # SQLite itself opened it read-only
        with store.engine.begin() as c:
            c.execute(text("CREATE TABLE probe (x INTEGER)"))
    r = _cli("runs", "--runs-dir", runs)
    assert r.exit_code == 0, (r.stderr, r.exception)
    assert run in r.stdout
    r = _cli("show", run, "--runs-dir", runs)
    assert r.exit_code == 0, (r.stderr, r.exception)
    assert "seed" in r.stdout
    line = _error_line(_cli("optimize", PROBLEM, "--seed", SEED, "--target", "cpu", "--runs-dir", runs))
    assert line == (
        f"error: the store in {runs} is read-only ({runs} is not writable): its runs can be listed and shown, not "
        "written; pass a writable --runs-dir (or copy this one somewhere writable)"
    )
    out = tmp_path / "relu.py"  # export only reads the store
    assert _cli("export", run, "--out", out, "--runs-dir", runs).exit_code == 0 and out.is_file()


def test_read_only_runs_dir_without_a_store(tmp_path, not_writable):
    not_writable(tmp_path)
    line = _error_line(_cli("runs", "--runs-dir", tmp_path))
    assert line == (
        f"error: the runs directory {tmp_path} is read-only and holds no store (kernelevolve.db); "
        "pass another --runs-dir"
    )


def test_unreadable_or_impossible_runs_dir(tmp_path, monkeypatch):
    (tmp_path / "a_file").write_text("")
    line = _error_line(_cli("runs", "--runs-dir", tmp_path / "a_file" / "runs"))
    assert line == (
        f"error: cannot create the runs directory {tmp_path / 'a_file' / 'runs'}: not a directory; "
        "pass another --runs-dir"
    )
    closed = tmp_path / "closed"
    closed.mkdir()
    access = os.access
    monkeypatch.setattr(
        os, "access", lambda p, mode, *a, **k: False if str(p) == str(closed) else access(p, mode, *a, **k)
    )
    line = _error_line(_cli("runs", "--runs-dir", closed))
    assert line == f"error: cannot read the runs directory {closed}: permission denied; pass a --runs-dir you can read"


# ---- messages with user and LLM text ----


def test_messages_print_model_names_as_written(tmp_path):
    r = _cli("optimize", PROBLEM, "--llm", "vllm:x:=many", "--target", "cpu", "--runs-dir", tmp_path)
    assert _error_line(r) == "error: --llm vllm:x:=many: the weight after '=' must be a number"
    r = _cli("optimize", PROBLEM, "--llm", "[bold]qwen[/]", "--target", "cpu", "--runs-dir", tmp_path)
    assert _error_line(r).startswith("error: --llm '[bold]qwen[/]': expected PROVIDER:MODEL")


def test_llm_errors_name_the_url_that_failed():
    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    for provider, base, path in (
        ("vllm", f"http://127.0.0.1:{port}/v1", "/chat/completions"),
        ("anthropic", f"http://127.0.0.1:{port}", "/v1/messages"),
    ):
        client = make_client(provider, "x:", base_url=base, timeout_s=2, retry=FAST_RETRY)
        with pytest.raises(LLMError) as caught:
            client.complete([Message("user", "u")])
        message = str(caught.value)  # the SDK's own words between vary with its version
        assert message.startswith(f"{provider}:x: at {base}{path}: APIConnectionError: Connection"), message
        assert message.endswith("(is a server listening there?)"), message


def test_unreachable_llm_server_is_named_in_optimize_output(tmp_path, monkeypatch):
    """In this process, with FAST_RETRY's backoff for every client: the default's four calls of four attempts
    spend 28 s waiting."""
    monkeypatch.setattr(
        RetryPolicy.__init__, "__defaults__", (FAST_RETRY.attempts, FAST_RETRY.initial_s, FAST_RETRY.max_s)
    )
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    base = f"http://127.0.0.1:{port}/v1"
    r = _cli(
        "optimize", PROBLEM, "--llm", "vllm:x:", "--llm-base-url", base, "--target", "cpu", "--runs-dir", tmp_path,
        "--trials", "1", "--json",
    )  # fmt: skip
    assert r.exception is None or isinstance(r.exception, SystemExit), r.exception
    assert "Traceback" not in r.stderr
    stopped = [line for line in r.stderr.splitlines() if line.startswith("stopped: ")]
    assert stopped and f"vllm:x: at {base}/chat/completions: APIConnectionError" in stopped[0], r.stderr


def test_a_missing_api_key_is_an_error_at_call_time(monkeypatch):
    for var in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL"):
        monkeypatch.delenv(var, raising=False)
    for provider, var in (("openai", "OPENAI_API_KEY"), ("anthropic", "ANTHROPIC_API_KEY")):
        client = make_client(provider, "m")  # building the client calls nothing and needs no key
        with pytest.raises(LLMError, match=f"^{provider}:m: no API key: set {var}"):
            client.complete([Message("user", "u")])


def test_dry_run_needs_no_api_key(tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY") and not k.endswith("_BASE_URL")}
    for llm in ("openai:gpt-4.1", "anthropic:claude-sonnet-4-5"):
        runs = tmp_path / llm.split(":")[0]
        p = _python("optimize", PROBLEM, "--llm", llm, "--dry-run", "--target", "cpu", "--runs-dir", runs, env=env)
        assert p.returncode == 0, p.stderr
        assert "class Model" in (runs / "prompt-kb_relu.md").read_text()
        assert "nothing was called" in p.stderr


def test_devices_that_are_not_gpu_indices_are_refused_before_any_worker_starts():
    from kernelevolve.eval.evaluator import evaluators

    with pytest.raises(ValueError, match="--devices must be comma-separated GPU indices, not '0,x'"):
        evaluators("cuda", "0,x")


def test_a_mistyped_gpu_judge_mode_is_one_line_before_any_worker_starts(monkeypatch):
    """KERNELEVOLVE_GPU_JUDGE takes split (the default) or in-process; anything else is said once, with the
    choices, by `eval` (exit 2) and by a run's specification, not by every GPU worker as it starts."""
    from kernelevolve.eval.wire import GPU_JUDGE_ENV, gpu_judge_split
    from kernelevolve.search.session import RunSpec, SessionError

    assert gpu_judge_split({}) and gpu_judge_split({GPU_JUDGE_ENV: "split"})
    assert not gpu_judge_split({GPU_JUDGE_ENV: "in-process"})
    monkeypatch.setenv(GPU_JUDGE_ENV, "inprocess")
    result = _cli("eval", PROBLEM, SEED, "--target", "cuda")
    assert result.exit_code == 2, result.output
    assert "KERNELEVOLVE_GPU_JUDGE='inprocess': choose one of split, in-process" in result.output
    assert "Traceback" not in result.output
    with pytest.raises(SessionError, match="choose one of split, in-process"):
        RunSpec(problem=PROBLEM, target="cuda", seed=SEED).check(device=False)
    # Every result on a GPU target says where the candidate ran when it is told to share the judge's process.
    from kernelevolve.eval.evaluator import Evaluator

    monkeypatch.setenv(GPU_JUDGE_ENV, "in-process")
    with Evaluator("cuda") as ev:
        assert ev._confinement("cuda").endswith(
            "the candidate in the judge's process (KERNELEVOLVE_GPU_JUDGE=in-process)"
        )
        monkeypatch.delenv(GPU_JUDGE_ENV)
        assert "judge's process" not in ev._confinement("cuda") and "judge's process" not in ev._confinement("cpu")
