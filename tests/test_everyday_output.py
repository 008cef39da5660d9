"""Issue 46 (everyday use, round 2): what a new user reads. Text in square brackets printed as written (items 1),
progress lines that say why a node failed (2), full-width tables off a terminal (4), a run that could not start
marked failed (6) and results in words against PyTorch (8). Output is captured off a terminal, as a log or CI
sees it; searches run on the test doubles (tests/doubles.py): no worker, no build."""

from __future__ import annotations

import click
import typer
from typer.testing import CliRunner

from kernelevolve.cli import app
from kernelevolve.cli.check_problem import _print as print_probes
from kernelevolve.cli.common import plain_console
from kernelevolve.cli.eval_cmd import print_result
from kernelevolve.cli.search_cmd import display
from kernelevolve.eval.probes import Probe, Soundness
from kernelevolve.result import CaseResult, EvalResult, Status
from kernelevolve.search import session
from kernelevolve.search.driver import Progress
from kernelevolve.search.session import Limits, RunSpec
from kernelevolve.store.store import NodeRecord, Store
from tests.conftest import FIXTURES
from tests.doubles import RuleEvaluator, kernel

PROBLEM = FIXTURES / "transpose.py"
BRACKETS = "error: yr[c] = s; and y[i] != x[/] [bold]not bold[/bold] [-Werror]"
UNSET = {"COLUMNS": None}  # off a terminal, with no width asked for


def cli(*args: object, env: dict | None = None):
    return CliRunner().invoke(app, [str(a) for a in args], env={**UNSET, **(env or {})})


def _helps(command: click.Command, path: tuple[str, ...] = ()):
    """(command path, help) of every option whose help has a `[`."""
    for param in command.params:
        if "[" in (getattr(param, "help", None) or ""):
            yield path, param.help.replace("\\[", "[")
    for name, sub in getattr(command, "commands", {}).items():
        yield from _helps(sub, (*path, name))


def test_help_keeps_text_in_square_brackets():
    helps = list(_helps(typer.main.get_command(app)))
    assert {("optimize",), ("runs", "rm"), ("bench",)} <= {path for path, _ in helps}
    for path, text in helps:
        shown = cli(*path, "--help", env={"COLUMNS": "2000"}).stdout
        assert text in shown, (path, text)
    assert "[default: 20; a resumed run: its own]" in cli("optimize", "--help", env={"COLUMNS": "2000"}).stdout


def _result(**fields) -> EvalResult:
    case = CaseResult(shape={"N": 8}, correct=True, t_candidate_ms=0.5, t_eager_ms=1.0, t_copy_ms=0.1, speedup=2.0)
    return EvalResult(status=Status.OK, correct=True, cases=[case], **fields).finalize()


def test_eval_prints_reasons_notes_and_logs_with_brackets_as_written(capsys):
    failed = EvalResult(
        status=Status.COMPILE_ERROR, correct=False, reason=BRACKETS, log_tail=f"log: {BRACKETS}\n",
        sandbox=f"none [{BRACKETS}]",
    ).finalize()  # fmt: skip
    print_result(failed, plain_console())
    out = capsys.readouterr().out
    assert f"reason: {BRACKETS}" in out and f"log: {BRACKETS}" in out and f"sandbox: none [{BRACKETS}]" in out
    print_result(_result(review=[BRACKETS], compile_baseline=BRACKETS), plain_console())
    out = capsys.readouterr().out
    assert f"review: {BRACKETS}" in out and f"note: {BRACKETS}" in out


def test_check_problem_prints_probe_reasons_and_warnings_as_written(capsys):
    report = Soundness([Probe("zeros", "incorrect", BRACKETS[:60])], [BRACKETS])
    print_probes(report, plain_console())
    out = capsys.readouterr().out
    assert BRACKETS[:60] in out and f"warning: {BRACKETS}" in out


def test_progress_lines_off_a_terminal_print_messages_as_written(capsys):
    with display(plain_console()) as update:
        update(Progress(nodes=1, budget=4, message=f"node 1 (seed): compile_error: {BRACKETS}"))
    assert f"[1/4] node 1 (seed): compile_error: {BRACKETS} | best -" in capsys.readouterr().out


def _store_with_run(tmp_path, fitness: float, reason: str = "") -> tuple[Store, str]:
    store = Store(tmp_path / "runs")
    run = store.create_run(
        problem_path=str(PROBLEM), problem_hash="ph", platform="cpu", config={"strategy": "greedy"},
        config_hash="c", budget=3,
    )  # fmt: skip
    case = CaseResult(shape={"N": 8}, correct=True, t_candidate_ms=1.0 / fitness, t_eager_ms=1.0, speedup=fitness)
    ok = EvalResult(status=Status.OK, correct=True, cases=[case]).finalize()
    seed = store.add_node(run.id, NodeRecord("seed", kernel(1), "h1", {"TILE": 1}, [], ok), strategy_state={})
    failed = EvalResult(status=Status.REJECTED, correct=False, reason=reason or BRACKETS).finalize()
    store.add_node(run.id, NodeRecord("tune", kernel(2), "h2", {"TILE": 2}, [seed.id], failed), strategy_state={})
    store.update_run(run.id, stop_reason=f"stopped [{BRACKETS}]")
    return store, run.id


def test_show_prints_reasons_with_brackets_and_full_width_tables_off_a_terminal(tmp_path):
    long = "the kernel's output differs " + "at many places " * 5 + "[see the log]"
    store, run_id = _store_with_run(tmp_path, 0.32, long)
    p = cli("show", run_id, "--runs-dir", store.runs_dir, "--all")
    assert p.exit_code == 0, p.output
    assert f"stopped [{BRACKETS}]" in p.stdout
    header = next(line for line in p.stdout.splitlines() if "operator" in line)
    assert all(f" {name} " in header for name in ("node", "operator", "parents", "status", "fitness", "params"))
    row = next(line for line in p.stdout.splitlines() if "rejected" in line)
    assert long[:96] in row  # one line, shortened at 100 characters, not wrapped a word a line
    assert max(map(len, p.stdout.splitlines())) > 80


def test_eval_table_is_full_width_off_a_terminal(capsys, monkeypatch):
    monkeypatch.delenv("COLUMNS", raising=False)
    shape = {f"DIMENSION_{i}": 1000 + i for i in range(6)}
    result = _result()
    result.cases[0].shape = shape
    print_result(result, plain_console())
    out = capsys.readouterr().out
    assert " ".join(f"{k}={v}" for k, v in shape.items()) in out
    header = next(line for line in out.splitlines() if "candidate ms" in line)
    assert all(name in header for name in ("eager ms", "copy of its bytes ms", "speedup"))


def test_a_summary_says_the_best_speedup_in_words(tmp_path):
    store, run_id = _store_with_run(tmp_path, 0.32)
    p = cli("show", run_id, "--runs-dir", store.runs_dir)
    assert "best: node 1, 3.12x slower than PyTorch eager (the baseline)" in p.stdout, p.stdout
    assert "`--node N` shows one in full" in p.stdout


def test_eval_says_the_speedup_in_words(capsys):
    print_result(_result(), plain_console())
    assert "2x faster than PyTorch eager (the baseline)" in capsys.readouterr().out


class Reasons(RuleEvaluator):
    """The seed has no ModelNew (a compile error over two lines); a TILE 2 kernel is rejected, with a review note."""

    def evaluate(self, problem, candidate, options=None, /, **kw) -> EvalResult:
        result = super().evaluate(problem, candidate, options, **kw)
        source = candidate.read_text()
        if "TILE = 1\n" in source:
            reason = "the candidate defines no ModelNew\n  (it must define class ModelNew(nn.Module))"
            return EvalResult(status=Status.COMPILE_ERROR, correct=False, reason=reason, versions=result.versions,
                              device=result.device).finalize()  # fmt: skip
        if "TILE = 2\n" in source:
            return EvalResult(
                status=Status.REJECTED, correct=False, reason="kernel policy: calls torch.matmul",
                review=["threads waited for a CPU 118% of the timed wall time"], versions=result.versions,
                device=result.device,
            ).finalize()  # fmt: skip
        return result


def test_progress_lines_say_why_each_failed_node_failed(tmp_path):
    seed = tmp_path / "seed.py"
    seed.write_text(kernel(1))
    start = tmp_path / "start.py"
    start.write_text(kernel(2))
    store = Store(tmp_path / "runs")
    opened = session.open_run(store, RunSpec(PROBLEM, seed, (start,)), Limits(budget=2))
    messages: list[str] = []
    driver = session.build_driver(opened, [Reasons()], warm_start=False, on_update=lambda p: messages.append(p.message))
    driver.run_search()
    session.finish(opened, "")
    assert (
        "node 1 (seed): compile_error: the candidate defines no ModelNew (it must define class ModelNew(nn.Module))"
        in messages
    ), messages
    assert "node 2 (start): rejected: kernel policy: calls torch.matmul" in messages, messages


def test_a_run_that_cannot_start_is_marked_failed_with_its_reason(tmp_path, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    seed = tmp_path / "seed.py"
    seed.write_text(kernel(1))
    runs = tmp_path / "runs"
    p = cli("optimize", PROBLEM, "--seed", seed, "--llm", "openai:gpt-4.1", "--target", "cpu", "--runs-dir", runs)
    assert p.exit_code == 2 and "no API key: set OPENAI_API_KEY" in p.stderr, p.output
    ((run, nodes, _),) = Store(runs).runs()
    assert run.status == "failed" and nodes == 0
    assert run.stop_reason.startswith("did not start: ") and "OPENAI_API_KEY" in run.stop_reason
    listed = cli("runs", "--runs-dir", runs).stdout
    assert "failed" in listed and "running" not in listed
