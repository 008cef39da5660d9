"""`kernelevolve bench`: a suite in, a reproducible results table out."""

from __future__ import annotations

import json
import time
from concurrent.futures import ThreadPoolExecutor, as_completed
from contextlib import ExitStack
from dataclasses import asdict, dataclass, replace
from pathlib import Path

import typer
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

from kernelevolve.cli.common import (
    ALLOW_TF32,
    CORRECTNESS,
    DB,
    LLM,
    LLM_TIMEOUT,
    MAX_INFLIGHT,
    RUNS_DIR,
    Baseline,
    Correctness,
    Target,
    app,
    err,
    literal,
    plain_console,
    usage_error,
)
from kernelevolve.eval import environment
from kernelevolve.eval.service.pool import SharedPool
from kernelevolve.eval.service.workers import WORKERS_HELP, make_pool
from kernelevolve.eval.wire import EvalOptions
from kernelevolve.platforms import default_target
from kernelevolve.problem.problem import Problem, ProblemError, load_problem, target_speedup
from kernelevolve.report.bench import BenchReportError
from kernelevolve.report.html import REPORT, ReportError, write_bench_report
from kernelevolve.search import session
from kernelevolve.search.export import export
from kernelevolve.search.ports import Evaluate
from kernelevolve.search.session import Limits, LLMSettings, RunSpec, SessionError
from kernelevolve.search.strategies import STRATEGIES
from kernelevolve.store.models import Run
from kernelevolve.store.store import Store, StoreError
from kernelevolve.suites import export_evaluation
from kernelevolve.suites.bench import (
    BenchItem,
    BenchRow,
    SuiteError,
    apply_target,
    counted,
    discover,
    hbm_rule,
    kernelbench,
    markdown,
    roofline_rule,
    row_from,
)
from kernelevolve.suites.scores import scores

# bench's options, one constant each, so that the command's signature reads as a list.
SUITE = typer.Argument(..., help="a folder of <name>/problem.py, a glob, 'ranking', 'aten', or 'kernelbench'")
KB_PATH = typer.Option(None, "--path", help="kernelbench: the KernelBench checkout")
LEVEL = typer.Option(1, help="kernelbench: the level")
PROBLEMS = typer.Option(None, "--problems", help="kernelbench: ids, e.g. 1-20,25")
ONLY = typer.Option(None, "--only", help="comma-separated problem names of the suite to run")
NO_SEARCH = typer.Option(False, "--no-search", help="evaluate the seed kernels only")
BUDGET = typer.Option(10, min=1, help="nodes per problem when searching")
TIME = typer.Option(
    None, "--time", min=1.0, help="seconds of search per problem (then the export is evaluated); default: none"
)
STRATEGY = typer.Option("greedy", help=f"search strategy: {', '.join(STRATEGIES)}")
LLM_BASE_URL = typer.Option(None, "--llm-base-url", envvar="KERNELEVOLVE_LLM_BASE_URL")
NO_SEEDS = typer.Option(
    False, "--no-seeds", help="search from the problem alone: the suite's seed and candidate_* kernels are not used"
)
TARGET = typer.Option(None, help="cpu, cuda or rocm; default cuda when a GPU is present")
OUT = typer.Option(Path("bench"), "--out", help="folder for results.json and results.md")
TRIALS = typer.Option(3, min=1)
TIMEOUT = typer.Option(300.0, help="per-evaluation limit in seconds")
DEVICES = typer.Option("0", help="GPU indices to search on, one worker each (e.g. 0,1,2,3)")
WORKERS = typer.Option("local", "--workers", help=WORKERS_HELP)
SEARCHES = typer.Option(
    None,
    "--searches",
    min=1,
    help=literal("problems searched (or evaluated) at once, sharing the pool per evaluation [default: 4 per device]"),
)
COMPILE_TIMEOUT = typer.Option(
    600.0, help="per-evaluation limit on compiles (C++/CUDA extension builds, torch.compile), in seconds"
)
BASELINE = typer.Option(Baseline.eager)
NO_COMPILE_BASELINE = typer.Option(
    False, "--no-compile-baseline", help="never time torch.compile (by default: seeds and each search's best)"
)
KEEP_UNRELIABLE = typer.Option(
    False,
    "--keep-unreliable",
    help="count rows timed on a contended host (marked unreliable, or inconclusive) in fast_p; by default they are "
    "left out",
)
REMEASURE = typer.Option(
    False,
    "--remeasure",
    help="evaluate finished searches' exported modules again (by default an unchanged module's evaluation, on "
    "the same options, harness, torch, Triton and device, is kept in its run and reused)",
)


@dataclass(frozen=True)
class BenchOptions:
    """How each problem of the suite is evaluated, or searched and its export evaluated."""

    no_search: bool
    budget: int
    strategy: str
    llm: list[str]
    llm_base_url: str | None
    trials: int
    timeout: float
    baseline: str
    compile_baseline: bool
    exports: Path
    time_s: float | None = None
    correctness: str = "measured"
    allow_tf32: bool = False
    llm_timeout: float = 300.0
    max_inflight: int | None = None
    remeasure: bool = False


@app.command("bench")
def bench_command(
    suite: str = SUITE,
    path: Path | None = KB_PATH,
    level: int = LEVEL,
    problems: str | None = PROBLEMS,
    only: str | None = ONLY,
    no_search: bool = NO_SEARCH,
    budget: int = BUDGET,
    time_s: float | None = TIME,
    strategy: str = STRATEGY,
    llm: list[str] = LLM,
    llm_base_url: str | None = LLM_BASE_URL,
    llm_timeout: float = LLM_TIMEOUT,
    max_inflight: int | None = MAX_INFLIGHT,
    no_seeds: bool = NO_SEEDS,
    target: Target | None = TARGET,
    out: Path = OUT,
    runs_dir: Path = RUNS_DIR,
    db: str | None = DB,
    trials: int = TRIALS,
    timeout: float = TIMEOUT,
    devices: str = DEVICES,
    workers: str = WORKERS,
    searches: int | None = SEARCHES,
    compile_timeout: float = COMPILE_TIMEOUT,
    baseline: Baseline = BASELINE,
    no_compile_baseline: bool = NO_COMPILE_BASELINE,
    correctness: Correctness = CORRECTNESS,
    allow_tf32: bool = ALLOW_TF32,
    remeasure: bool = REMEASURE,
    keep_unreliable: bool = KEEP_UNRELIABLE,
) -> None:
    """Evaluate (or optimize) every problem of a suite; a failing problem is reported, not fatal."""
    tgt = (target.value if target else None) or default_target()
    items = _items(suite, path, level, problems, only, no_seeds, tgt)
    how = BenchOptions(
        no_search, budget, strategy, llm, llm_base_url, trials, timeout, baseline.value, not no_compile_baseline,
        out / "exports", time_s, correctness.value, allow_tf32, llm_timeout, max_inflight, remeasure,
    )  # fmt: skip
    started = time.strftime("%Y-%m-%d %H:%M")
    header = Header(suite, tgt, started, no_search, budget, strategy, time_s, runs_dir, keep_unreliable)
    where = Workers(runs_dir, db, workers, devices, timeout, compile_timeout, searches)
    rows = run_suite(items, how, header, where, out)
    text = _write(out, rows, header)
    plain_console().print(text)
    err.print(f"wrote {out / 'results.json'}, {out / 'results.md'} and {out / REPORT}")
    waiting = [r for r in rows if r.status == "waiting"]
    if waiting:
        err.print(
            f"waiting: {len(waiting)} of {len(rows)} problems wait for the model's answers to "
            f"{sum(r.waiting for r in waiting)} calls (the first: {waiting[0].reason}); run the same bench command "
            "again once they are there: each run goes on where it stopped"
        )


@dataclass(frozen=True)
class Workers:
    """Where a suite's problems are evaluated: the store, the pool of workers, how many problems at once."""

    runs_dir: Path
    db: str | None
    workers: str
    devices: str
    timeout: float
    compile_timeout: float
    searches: int | None = None  # problems at once [default: 4 per device]


def run_suite(items: list[BenchItem], how: BenchOptions, header: Header, where: Workers, out: Path) -> list[BenchRow]:
    """Every item evaluated, or searched and its export evaluated, several at once on one pool, in the items'
    order (the first started first); results.json, results.md and report.html under `out` as each ends. Bench and
    `kernelevolve model --search` (cli/model_cmd.py) both run their problems through it."""
    _check_seeds(items, how.no_search, how.llm)
    try:
        store = Store(where.runs_dir, where.db)
        limits = {"timeout_s": where.timeout, "compile_timeout_s": where.compile_timeout}
        pool = make_pool(header.target, where.workers, where.devices, **limits)
    except (StoreError, ValueError) as e:
        raise usage_error(str(e)) from None
    out.mkdir(parents=True, exist_ok=True)
    with ExitStack() as stack:
        stack.callback(pool.close)
        return _run_all(items, store, pool, header.target, how, out, header, where.searches or 4 * pool.size)


def _items(
    suite: str, path: Path | None, level: int, problems: str | None, only: str | None, no_seeds: bool, tgt: str
) -> list[BenchItem]:
    """The suite's problems, those --only names, without their seeds with --no-seeds."""
    try:
        items = kernelbench(path, level, problems) if suite == "kernelbench" and path else discover(suite, tgt)
    except SuiteError as e:
        raise usage_error(str(e)) from None
    if suite == "kernelbench" and path is None:
        raise usage_error("bench kernelbench needs --path to a KernelBench checkout")
    if only:
        wanted = [n.strip() for n in only.split(",") if n.strip()]
        unknown = sorted(set(wanted) - {i.name for i in items})
        if unknown:
            raise usage_error(
                f"--only: no problem named {', '.join(unknown)}; the suite has {', '.join(i.name for i in items)}"
            )
        items = [i for i in items if i.name in wanted]
    return [replace(i, seed=None, starts=[]) for i in items] if no_seeds else items


def _check_seeds(items: list[BenchItem], no_search: bool, llm: list[str]) -> None:
    """Problems without a seed: a note when only evaluating, a usage error when searching them needs a model."""
    if no_search and any(i.seed is None for i in items) and not llm:
        missing = ", ".join(i.name for i in items if i.seed is None)
        err.print(f"note: no seed kernel for {missing}; they are reported as not evaluated")
    if not no_search and not llm and all(i.seed is None for i in items):
        raise usage_error("these problems have no seed kernels: searching them needs an LLM (--llm)")


@dataclass(frozen=True)
class Header:
    """What results.json and results.md say of the bench as a whole."""

    suite: str
    target: str
    started: str
    no_search: bool
    budget: int
    strategy: str
    time_s: float | None
    runs_dir: Path
    keep_unreliable: bool = False  # fast_p counts rows a contended host left unreliable


def _run_all(
    items: list[BenchItem],
    store: Store,
    pool: SharedPool,
    tgt: str,
    how: BenchOptions,
    out: Path,
    header: Header,
    searches: int,
) -> list[BenchRow]:
    """Up to `searches` problems at once, each in a thread of its own, all evaluating on one pool, scheduled per
    evaluation (eval/service/pool.py); a progress bar on a terminal (a line as each starts elsewhere), a line as
    each ends; results and report rewritten after every problem, so partial results survive a kill."""
    rows: dict[int, BenchRow] = {}
    columns = (TextColumn("{task.description}", markup=False), BarColumn(), TextColumn("{task.completed}/{task.total}"))
    with (
        Progress(*columns, TimeElapsedColumn(), console=plain_console(stderr=True)) as progress,
        ThreadPoolExecutor(max_workers=searches, thread_name_prefix="bench") as threads,
    ):
        task = progress.add_task("bench", total=len(items))

        def started(i: int) -> BenchRow:
            if not progress.console.is_terminal:  # the bar is drawn only on a terminal: a line per problem
                progress.console.print(f"[{i + 1}/{len(items)}] {items[i].name}: started")
            return _row(items[i], store, pool, tgt, how)

        running = {threads.submit(started, i): i for i in range(len(items))}
        for future in as_completed(running):
            i = running[future]
            rows[i] = r = future.result()
            progress.update(task, description=items[i].name)
            progress.console.print(
                f"{items[i].name}: {r.status}"
                + (f" {r.speedup_eager:.2f}x" if r.speedup_eager else "")
                + (f" ({r.reason[:100]})" if r.reason and not r.correct else "")
                + (f" (unreliable: {r.unreliable[:160]})" if r.unreliable and r.correct else "")
                + (f" [search: {r.search}]" if r.search else "")
            )
            progress.advance(task)
            _write(out, [rows[k] for k in sorted(rows)], header)
            _report(out, store, items[i].name)
    return [rows[k] for k in sorted(rows)]


def _row(item: BenchItem, store: Store, pool: SharedPool, tgt: str, how: BenchOptions) -> BenchRow:
    """One problem's row, evaluated through lanes of its own on the shared pool; its failure is its row, not the
    end of the bench."""
    try:
        return _one(item, store, pool.lanes(), tgt, how)
    except (ProblemError, SessionError, OSError) as e:
        return BenchRow(item.name, "problem_error", False, reason=str(e))
    except Exception as e:  # noqa: BLE001 - one problem's failure is its row, not the end of the run
        return BenchRow(item.name, "error", False, reason=f"{type(e).__name__}: {e}")


def _write(out: Path, rows: list[BenchRow], h: Header) -> str:
    limit = f", at most {h.time_s:g} s each" if h.time_s else ""
    what = "seeds only" if h.no_search else f"search, budget {h.budget}{limit}, {h.strategy}"
    header = (
        f"# {h.suite} on {h.target}: {what}\n\n"
        f"{h.started}; `kernelevolve bench {h.suite}{' --no-search' if h.no_search else ''} --target {h.target}`"
    )
    (out / "results.json").write_text(
        json.dumps(
            {
                "suite": h.suite,
                "target": h.target,
                "date": h.started,
                "runs_dir": str(h.runs_dir.resolve()),  # where the rows' runs are: `kernelevolve report OUT` reads them
                "rows": [asdict(r) for r in rows],
                # Rows a contended host left unreliable: out of fast_p unless keep_unreliable (--keep-unreliable)
                "keep_unreliable": h.keep_unreliable,
                "left_out": [r.name for r in rows if r not in counted(rows, h.keep_unreliable)],
                "roofline_rule": roofline_rule(rows),
                "hbm_rule": hbm_rule(rows),
                "scores": scores(rows),  # BackendBench's (suites/scores.py)
            },
            indent=1,
        )
    )
    text = markdown(rows, header, h.keep_unreliable)
    (out / "results.md").write_text(text)
    return text


def _report(out: Path, store: Store, name: str) -> None:
    """report.html beside results.md, with the run report of the problem just finished under OUT/reports/; a
    report that cannot be written is said, never the end of the bench."""
    try:
        _, notes = write_bench_report(out, store, problems={name})
    except (ReportError, BenchReportError, ImportError) as e:
        err.print(f"note: {REPORT} was not written: {e}", highlight=False)
        return
    for note in notes:
        err.print(f"note: {note}", highlight=False)


def _one(item: BenchItem, store: Store, evaluators: list[Evaluate], target: str, how: BenchOptions) -> BenchRow:
    """A search's row is its exported module's evaluation, with the torch.compile baseline the search ran without.
    The search is a run like optimize's (search/session.py): the same bench command again resumes it."""
    problem = load_problem(item.problem)
    target_of = target_speedup(problem)  # read first: a malformed TARGET_SPEEDUP fails before the search
    options = EvalOptions(
        trials=how.trials,
        baseline=how.baseline,
        compile_baseline=None if how.compile_baseline else False,
        correctness=how.correctness,
        allow_tf32=how.allow_tf32,
    )
    if how.no_search:
        if item.seed is None:
            return BenchRow(item.name, "not_evaluated", False, reason="no seed kernel")
        # single evaluations on the first evaluator; a search spreads over all of them, one per device
        result = evaluators[0].evaluate(problem, item.seed, options, copy_floor=True)
        return apply_target(row_from(item.name, result, seed=item.seed.name), target_of)
    opened, outcome = _search(item, store, evaluators, target, how)
    searched = f"{outcome.evaluations} nodes; {outcome.stop_reason}"
    if outcome.waiting:  # one round done: the export is evaluated when the run is
        best = f"; best so far {outcome.best_fitness:.3g}x (node {outcome.best_node})" if outcome.best_node else ""
        row = BenchRow(
            item.name, "waiting", False, run=opened.run.id, reason=outcome.stop_reason, search=searched + best
        )
        row.waiting = outcome.waiting
        return row
    if outcome.best_node is None:
        nodes = store.nodes(opened.run.id)
        first = store.evaluation(nodes[0].id) if nodes else None
        why = f"; the seed: {first.status.value}: {first.reason}" if first is not None else ""
        reason = f"the search found no correct kernel{why}"
        return BenchRow(item.name, "no_correct_kernel", False, run=opened.run.id, reason=reason, search=searched)
    row = _export_row(item, store, evaluators[0], opened.run, problem, options, how)
    row.search = searched + row.search
    return apply_target(row, target_of)


def _search(
    item: BenchItem, store: Store, evaluators: list[Evaluate], target: str, how: BenchOptions
) -> tuple[session.Session, session.RunOutcome]:
    """The problem's search, a run like optimize's."""
    spec = RunSpec(
        item.problem,
        item.seed,
        tuple(item.starts),
        target,
        how.strategy,
        how.trials,
        how.baseline,
        how.compile_baseline,
        llm=tuple(how.llm),
        tag="bench",
        correctness=how.correctness,
        allow_tf32=how.allow_tf32,
    )
    opened = session.open_run(store, spec, Limits(budget=how.budget, time_s=how.time_s))
    with session.starting(opened):
        operator = session.llm_operator(opened, LLMSettings(how.llm_base_url, timeout_s=how.llm_timeout))
    driver = session.build_driver(opened, evaluators, llm=operator, warm_start=False, max_inflight=how.max_inflight)
    stopped = driver.run_search()
    return opened, session.finish(opened, stopped)


def _export_row(
    item: BenchItem,
    store: Store,
    evaluator: Evaluate,
    run: Run,
    problem: Problem,
    options: EvalOptions,
    how: BenchOptions,
) -> BenchRow:
    """The deliverable is the exported module: each case dispatched to its fastest kernel, the reference where
    none beat it. It calls the reference, so the kernel policy is off for it (its kernels passed it in the search).
    Its evaluation is kept in the run and reused unless --remeasure; the row's `search` says when it was reused."""
    exported = how.exports / f"{item.name}.py"
    exported.parent.mkdir(parents=True, exist_ok=True)
    export(store, run, exported)
    # copy_floor: the row's account of a missed target, the case's time beside a copy of its bytes
    source = exported.read_text()
    kept_how = {**asdict(options), "require_kernel": False, "copy_floor": True}
    folder = store.runs_dir / run.id
    kept = None
    if not how.remeasure:
        kept = export_evaluation.reusable(folder, source, kept_how, environment.of(evaluator.platform))
    note = ""
    if kept is None:
        final = evaluator.evaluate(problem, exported, options, require_kernel=False, copy_floor=True)
        unkept = export_evaluation.keep(folder, source, kept_how, final)
        if unkept:
            err.print(f"note: {item.name}: {unkept}")
    else:
        final, when = kept
        note = f"; the export's evaluation of {when} reused (--remeasure evaluates it again)"
    row = row_from(item.name, final, seed=item.seed.name if item.seed else "", run=run.id, kernel=str(exported))
    row.search = note
    return row
