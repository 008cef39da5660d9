"""`kernelevolve model ENTRY`: profile a model on a target, print the Amdahl table, extract the picked candidates
as problem files and, with --search, optimize them through bench's machinery (docs/model.md)."""

from __future__ import annotations

import json
import math
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

from kernelevolve.cli.bench_cmd import (
    BUDGET,
    COMPILE_TIMEOUT,
    DEVICES,
    LLM_BASE_URL,
    NO_COMPILE_BASELINE,
    STRATEGY,
    TIMEOUT,
    TRIALS,
    WORKERS,
    BenchOptions,
    Header,
    Workers,
    run_suite,
)
from kernelevolve.cli.common import (
    ALLOW_TF32,
    CORRECTNESS,
    DB,
    LLM,
    LLM_TIMEOUT,
    MAX_INFLIGHT,
    RUNS_DIR,
    Correctness,
    Target,
    app,
    err,
    plain_console,
    usage_error,
)
from kernelevolve.model.region_file import KERNELS, REGIONS
from kernelevolve.store.store import Store, StoreError

if TYPE_CHECKING:  # the model package imports torch: loaded when the command runs, not with the CLI
    from kernelevolve.model.entry import LoadedModel
    from kernelevolve.model.profile import Profile
    from kernelevolve.model.table import Row

ENTRY = typer.Argument(
    ...,
    help="MODULE:FUNCTION (FUNCTION() returns (model, example_inputs)), or recipe:NAME (kernelevolve/aten/recipes.py)",
)
TARGET = typer.Option(None, help="cpu or cuda; default cuda when a GPU is present")
COMPILED = typer.Option(False, "--compiled", help="also time the forward under torch.compile (the table's context)")
OUT = typer.Option(Path("model"), "--out", help="folder for <name>/problem.py and model.json")
LIST = typer.Option(False, "--list", help="print the table and the candidates' names; write nothing")
PICK = typer.Option(None, "--pick", help="comma-separated names of the candidates to extract (and search)")
TOP = typer.Option(10, "--top", min=1, help="without --pick: the most valuable K extractable candidates")
ASSUME = typer.Option(None, "--assume-speedup", min=1.0, help="a column: the end-to-end speedup at this kernel speedup")
JSON = typer.Option(False, "--json", help="the table as JSON on stdout")
OPINFO = typer.Option(True, "--opinfo/--no-opinfo", help="check each operator on OpInfo's samples too, like the suite")
SEARCH = typer.Option(False, "--search", help="optimize the picked problems, most valuable first")
TIME = typer.Option(None, "--time", min=1.0, help="seconds of search for the whole model (split over the searches)")
SEARCHES = typer.Option(4, "--searches", min=1, help="problems searched at once, sharing the pool")


@dataclass(frozen=True)
class Picking:
    pick: str | None
    top: int


@app.command("model")
def model_command(
    entry: str = ENTRY,
    target: Target | None = TARGET,
    compiled: bool = COMPILED,
    out: Path = OUT,
    list_only: bool = LIST,
    pick: str | None = PICK,
    top: int = TOP,
    assume: float | None = ASSUME,
    as_json: bool = JSON,
    opinfo: bool = OPINFO,
    search: bool = SEARCH,
    budget: int = BUDGET,
    time_s: float | None = TIME,
    strategy: str = STRATEGY,
    llm: list[str] = LLM,
    llm_base_url: str | None = LLM_BASE_URL,
    llm_timeout: float = LLM_TIMEOUT,
    max_inflight: int | None = MAX_INFLIGHT,
    searches: int = SEARCHES,
    trials: int = TRIALS,
    timeout: float = TIMEOUT,
    devices: str = DEVICES,
    workers: str = WORKERS,
    compile_timeout: float = COMPILE_TIMEOUT,
    no_compile_baseline: bool = NO_COMPILE_BASELINE,
    correctness: Correctness = CORRECTNESS,
    allow_tf32: bool = ALLOW_TF32,
    runs_dir: Path = RUNS_DIR,
    db: str | None = DB,
) -> None:
    """Profile a model's forward on the target, rank its operators (and fused regions) by what an ideal kernel
    could save end to end, extract the picked ones as problem files under --out, and with --search optimize them."""
    from kernelevolve.cli.model_view import show
    from kernelevolve.model.extract import write_manifest, write_problems
    from kernelevolve.model.table import as_json as table_json
    from kernelevolve.platforms import default_target

    if list_only and search:
        raise usage_error("--list prints the table and writes nothing; --search extracts and searches: give one")
    tgt = (target.value if target else None) or default_target()
    loaded, profile, rows, notes = _profiled(entry, tgt, compiled)
    picked = _picked(rows, Picking(pick, top))
    console = plain_console()
    if not as_json:
        show(console, profile, rows, {r.name for r in picked}, assume, notes)
    if list_only:
        _list(console, rows, picked, as_json, table_json(profile, rows, entry, assume))
        return
    digests, lines = write_problems(picked, out, entry, opinfo)
    for line in lines:
        err.print(line)
    manifest = write_manifest(out, table_json(profile, rows, entry, assume), digests)
    extracted = [r for r in picked if r.problem]
    if not search:
        err.print(f"{len(extracted)} problems under {out}, the table in {manifest}; edit them if you like, then run "
                  "the same command with --search (files already there are kept, never overwritten)")  # fmt: skip
        if as_json:
            typer.echo(json.dumps(table_json(profile, rows, entry, assume), indent=1))
        return
    if not extracted:
        raise usage_error(f"none of the picked candidates could be extracted (see above): nothing to search in {out}")
    how = BenchOptions(
        False, budget, strategy, llm, llm_base_url, trials, timeout, "eager", not no_compile_baseline,
        out / "search" / "exports", _per_search(time_s, len(extracted), searches), correctness.value, allow_tf32,
        llm_timeout, max_inflight,
    )  # fmt: skip
    where = Workers(runs_dir, db, workers, devices, timeout, compile_timeout, searches)
    _search(extracted, out, how, where, tgt)
    _swap_dir(rows, out, where, loaded)
    table = table_json(profile, rows, entry, assume)
    write_manifest(out, table, digests)
    if as_json:
        typer.echo(json.dumps(table, indent=1))
    else:
        show(console, profile, rows, {r.name for r in picked}, assume, [])


def _profiled(entry: str, target: str, compiled: bool) -> tuple[LoadedModel, Profile, list[Row], list[str]]:
    """The entry's model profiled on the target, its candidates ranked, and the lines to say; one line and exit
    status 2 for an entry or a model that is wrong."""
    from kernelevolve.model.candidates import all_candidates
    from kernelevolve.model.entry import ModelError, load
    from kernelevolve.model.profile import profile_model

    try:
        loaded = load(entry, target)
        profile = profile_model(loaded, compiled)
    except ModelError as e:
        raise usage_error(str(e)) from None
    rows, notes = all_candidates(loaded, profile)
    return loaded, profile, rows, notes


def _picked(rows: list[Row], how: Picking) -> list[Row]:
    """The rows --pick names (each must be an extractable candidate), else the --top most valuable extractable."""
    extractable = [r for r in rows if r.extractable]
    if not how.pick:
        return extractable[: how.top]
    wanted = [n.strip() for n in how.pick.split(",") if n.strip()]
    by_name = {r.name: r for r in rows}
    for name in wanted:
        if name not in by_name:
            shown = ", ".join(r.name for r in extractable[:20])
            raise usage_error(f"--pick: no candidate named {name}; the most valuable are {shown} (see --list)")
        if not by_name[name].extractable:
            raise usage_error(f"--pick: {name} cannot be a problem: {by_name[name].reason}")
    return [r for r in rows if r.name in wanted]


def _list(console, rows: list[Row], picked: list[Row], as_json: bool, table: dict) -> None:  # noqa: ANN001
    if as_json:
        typer.echo(json.dumps(table, indent=1))
        return
    console.print("candidates (most valuable first): " + " ".join(r.name for r in rows if r.extractable))
    console.print(f"picked by default: {','.join(r.name for r in picked)}")


def _per_search(time_s: float | None, problems: int, searches: int) -> float | None:
    """--time is the whole model's: each search gets its wave's share (problems run `searches` at a time)."""
    if time_s is None or problems == 0:
        return None
    return time_s / math.ceil(problems / searches)


def _search(rows: list[Row], out: Path, how: BenchOptions, where: Workers, target: str) -> None:
    """The rows' problems searched through bench's runner, most valuable first; each row gets its export's
    measured speedup over eager (none where no correct kernel was found), and its search's run."""
    from kernelevolve.suites.bench import BenchItem, discover

    found = {i.name: i for i in discover(str(out), target)}
    items = [found.get(r.name) or BenchItem(r.name, Path(r.problem), None) for r in rows]
    started = time.strftime("%Y-%m-%d %H:%M")
    # named by its folder: results.md's command line (`kernelevolve bench DIR`) searches these problems again
    header = Header(str(out), target, started, False, how.budget, how.strategy, how.time_s, where.runs_dir)
    results = {b.name: b for b in run_suite(items, how, header, where, out / "search")}
    for row in rows:
        result = results.get(row.name)
        if result is not None:
            row.status = result.status
            row.measured = result.speedup_eager if result.correct else None
            row.run = result.run if result.correct else ""
    err.print(f"search results: {out / 'search' / 'results.md'}")
    _kernel_dir(rows, results, where, out / KERNELS)


def _kernel_dir(rows: list[Row], results: dict[str, Any], where: Workers, folder: Path) -> None:
    """The searched operators' kernels, each only on the cases where it beat the baseline, as a kernel directory
    (kernels/write.py): `kernelevolve.enable(folder)` then runs the unmodified model with them, ATen serving the
    rest. Regions are _swap_dir's."""
    from kernelevolve.kernels.write import export_kernel_dir
    from kernelevolve.problem.problem import ProblemError
    from kernelevolve.search.export import ExportError

    store = Store(where.runs_dir, where.db)
    written = []
    for row in rows:
        result = results.get(row.name)
        if row.kind != "operator" or result is None or not result.correct or not result.run:
            continue
        run = store.get_run(result.run)
        try:
            path, entry = export_kernel_dir(store, run, folder) if run is not None else (None, None)
        except (ExportError, ProblemError, StoreError) as e:
            err.print(f"{row.name}: no kernel file: {e}")
            continue
        if entry is not None:
            written.append(path.name)
    if written:
        err.print(f"kernel directory: {folder} ({len(written)} operators); kernelevolve.enable({str(folder)!r}) runs")
        err.print("the model with them, each on the shapes where it won, ATen everywhere else (docs/aten.md)")
    else:
        err.print("no operator's kernel beat the baseline on any case: no kernel directory (ATen serves them all)")


def _swap_dir(rows: list[Row], out: Path, where: Workers, loaded: LoadedModel) -> None:
    """The searched regions whose kernel won at the model's shapes as region files (DIR/regions), the model's
    state_dict and example inputs beside them, and a trial swap-in of the whole directory on the model, said
    region by region: `kernelevolve.swap(model, DIR)` rebuilds it (docs/model.md, "Swap-in")."""
    from kernelevolve.model.region_export import export_region, save_model
    from kernelevolve.model.swap import SwapError, swap
    from kernelevolve.search.export import ExportError

    store = Store(where.runs_dir, where.db)
    for row in [r for r in rows if r.kind != "operator" and r.status]:
        run = store.get_run(row.run) if row.run else None
        try:
            path, entry = export_region(store, run, row, out / REGIONS) if run is not None else (None, None)
        except (ExportError, OSError, StoreError) as e:
            err.print(f"{row.name}: no region file: {e}")
            continue
        if entry is None:
            (out / REGIONS / f"{row.name}.py").unlink(missing_ok=True)  # an earlier search's, now beaten
            why = "no kernel beat the faster of eager and torch.compile" if row.run else "no correct kernel"
            err.print(f"region {row.name}: {why}: not swapped in")
    save_model(out, loaded.model, loaded.args, loaded.kwargs)
    try:
        swapped = swap(loaded.model, out)
    except SwapError as e:
        err.print(f"swap-in: {e}")
        return
    for line in swapped.kernelevolve_report.lines() or ["nothing to swap in: every region and operator keeps ATen"]:
        err.print(f"swap-in: {line}")
    err.print(f"kernelevolve.swap(model, {str(out)!r}) rebuilds the swapped model (docs/model.md, Swap-in)")
