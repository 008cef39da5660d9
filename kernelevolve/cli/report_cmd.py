"""`kernelevolve report` (a run's or a bench folder's HTML report) and `kernelevolve serve` (the live view)."""

from __future__ import annotations

from pathlib import Path

import typer

from kernelevolve.cli.common import DB, RUNS_DIR, app, err, usage_error
from kernelevolve.report.bench import RESULTS, BenchReportError, is_bench_folder, load_results
from kernelevolve.report.html import REPORT, ReportError, write_bench_report, write_run_report
from kernelevolve.store.store import Store, StoreError


def _store(runs_dir: Path, db: str | None) -> Store:
    try:
        return Store(runs_dir, db, read_only=True)
    except StoreError as e:
        raise usage_error(str(e)) from None


def run_report(store: Store, run_id: str, out: Path | None = None) -> Path:
    """Write a run's report (default RUNS_DIR/RUN/report.html); the CLI's one way to it (report, optimize)."""
    run = store.get_run(run_id)
    if run is None:
        raise usage_error(f"no run {run_id!r} in {store.shown_url()}; `kernelevolve runs` lists them")
    try:
        return write_run_report(store, run, out or store.path(run.id) / REPORT)
    except ReportError as e:
        raise usage_error(str(e)) from None


@app.command("report")
def report_command(
    ctx: typer.Context,
    what: str = typer.Argument(..., help="a run id (or a unique prefix of one), or a `bench` output folder"),
    out: Path | None = typer.Option(
        None,
        "--out",
        help="the HTML file to write (default: RUNS_DIR/RUN/report.html, or report.html in the bench folder)",
    ),
    runs_dir: Path = RUNS_DIR,
    db: str | None = DB,
) -> None:
    """One self-contained HTML file (it opens without a network): fitness over steps and time, the search graph
    with every node's record, per-case speedups, LLM accounting; for a bench folder, its tables as charts."""
    folder = Path(what)
    if folder.is_file() and folder.name == RESULTS:  # the results file itself: its folder is meant
        folder = folder.parent
    elif "/" in what and not folder.exists():
        raise usage_error(f"{what}: no such folder; give a `kernelevolve bench` output folder or a run id")
    if folder.is_dir():
        default_runs_dir = getattr(ctx.get_parameter_source("runs_dir"), "name", "") == "DEFAULT"
        path = _bench_report(folder, out, None if default_runs_dir and not db else runs_dir, db)
    else:
        path = run_report(_store(runs_dir, db), what, out)
    err.print(f"wrote {path}", highlight=False)


def _bench_report(folder: Path, out: Path | None, runs_dir: Path | None, db: str | None) -> Path:
    """runs_dir None: the one results.json names (where bench kept the runs), else ./runs. Without a store the
    page is written without run reports, and says so."""
    if not is_bench_folder(folder):
        raise usage_error(
            f"{folder} is a folder without {RESULTS}: give a `kernelevolve bench` output folder or a run id"
        )
    try:
        named = load_results(folder).get("runs_dir")
    except BenchReportError as e:
        raise usage_error(str(e)) from None
    store = None
    try:
        store = Store(runs_dir or Path(named or "runs"), db, read_only=True)
    except StoreError as e:
        err.print(f"note: no run reports: {e}", highlight=False)
    try:
        path, notes = write_bench_report(folder, store, out)
    except (ReportError, BenchReportError) as e:
        raise usage_error(str(e)) from None
    for note in notes:
        err.print(f"note: {note}", highlight=False)
    return path


@app.command("serve")
def serve_command(
    runs_dir: Path = RUNS_DIR,
    db: str | None = DB,
    host: str = typer.Option(
        "127.0.0.1",
        "--host",
        help="the address to listen on (another than this machine's own loopback lets others read your runs)",
    ),
    port: int = typer.Option(8000, "--port", min=0, max=65535, help="the port to listen on (0: any free one)"),
    refresh: float = typer.Option(2.0, "--refresh", min=0.1, help="seconds between a page's updates"),
) -> None:
    """A live view of the store's runs in a browser: running ones update as nodes are committed. Read-only."""
    from kernelevolve.report.serve import ServeError, bind, create_app, serve, url_of

    store = _store(runs_dir, db)
    try:
        sock = bind(host, port)
    except ServeError as e:
        raise usage_error(str(e)) from None
    url = url_of(sock)
    if host not in ("127.0.0.1", "localhost", "::1"):
        err.print(f"note: listening on {host}: anyone who can reach it can read these runs (kernels, prompts)")

    def started() -> None:
        err.print(f"serving the runs of {store.shown_url()} at {url} (read-only; Ctrl-C stops)", highlight=False)

    try:
        serve(create_app(store, refresh_s=refresh), sock, started)
    except KeyboardInterrupt:  # uvicorn raises the signal again once it has shut down
        pass
    err.print("stopped")
