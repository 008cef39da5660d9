"""`kernelevolve runs rm`: delete runs (their records and their folders); `kernelevolve runs` lists them
(cli/search_cmd.py)."""

from __future__ import annotations

import sys
from pathlib import Path

import typer

from kernelevolve.cli.common import EXIT_NOT_CORRECT, err, literal, plain_console, usage_error
from kernelevolve.cli.search_cmd import _open_store, runs_app
from kernelevolve.store.store import StoreError


def interactive() -> bool:
    """Whether a question can be answered: stdin is a terminal."""
    return sys.stdin.isatty()


def confirm(action: str, yes: bool) -> None:
    """Go on with --yes or a yes on a terminal; off a terminal without --yes, a usage error (nothing done)."""
    if yes:
        return
    if not interactive():
        raise usage_error(f"to {action}, add --yes (stdin is not a terminal, so nothing was asked and nothing done)")
    if not typer.confirm(f"{action}?", default=False):
        err.print("nothing done")
        raise typer.Exit(EXIT_NOT_CORRECT)


@runs_app.command("rm")
def rm_command(
    ctx: typer.Context,
    run_ids: list[str] = typer.Argument(..., help="run ids (or unique prefixes)"),
    yes: bool = typer.Option(False, "--yes", "-y", help="do not ask (needed when stdin is not a terminal)"),
    runs_dir: Path | None = typer.Option(None, "--runs-dir", help=literal("where runs live [default: runs]")),
    db: str | None = typer.Option(None, "--db", help="SQLAlchemy URL of the store (default: SQLite in runs dir)"),
) -> None:
    """Delete runs: their records and their folders.

    Records: nodes, edges, evaluations, analyses, LLM calls. Nodes of other runs that reused their evaluations keep
    their own copies (their link to the deleted node is cleared)."""
    parent = ctx.parent.params if ctx.parent is not None else {}
    store = _open_store(runs_dir or parent.get("runs_dir") or Path("runs"), db or parent.get("db"))
    runs = []
    for run_id in run_ids:
        run = store.get_run(run_id)
        if run is None:
            where = store.shown_url()
            raise usage_error(f"no run {run_id!r} in {where} (or the prefix is not unique); nothing deleted")
        runs.append(run)
    counts = {r.id: n for r, n, _ in store.runs()}
    what = ", ".join(f"{r.id} ({_problem(r.problem_path)}, {counts.get(r.id, 0)} nodes, {r.status})" for r in runs)
    confirm(f"delete {'runs' if len(runs) > 1 else 'run'} {what} with {'their' if len(runs) > 1 else 'its'} files", yes)
    out = plain_console()
    for run in runs:
        try:
            done = store.delete_run(run.id)
        except StoreError as e:
            raise usage_error(str(e)) from None
        folder = f"; removed {done['folder']}" if done["folder"] else ""
        kept = (
            f"; {done['reused_cleared']} node(s) of other runs had reused its evaluations and keep their own copies"
            if done["reused_cleared"]
            else ""
        )
        out.print(
            f"deleted run {run.id}: {done['nodes']} nodes, {done['llm_calls']} LLM calls{folder}{kept}",
            highlight=False,
            markup=False,
        )


def _problem(path: str) -> str:
    p = Path(path)
    return p.parent.name if p.name == "problem.py" else p.name
