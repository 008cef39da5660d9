"""`kernelevolve bench`: a suite in, a reproducible results table out."""

from __future__ import annotations

import json
import time
from contextlib import ExitStack
from dataclasses import asdict, replace
from pathlib import Path

import typer
from rich.console import Console
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

from kernelevolve.cli.common import (
    ALLOW_TF32,
    CORRECTNESS,
    LLM,
    LLM_TIMEOUT,
    MAX_INFLIGHT,
    RUNS_DIR,
    Baseline,
    Correctness,
    Target,
    app,
    err,
    usage_error,
)
from kernelevolve.eval import environment
from kernelevolve.eval.evaluator import Evaluator
from kernelevolve.eval.evaluator import evaluators as make_evaluators
from kernelevolve.eval.wire import EvalOptions
from kernelevolve.platforms import default_target
from kernelevolve.problem.problem import ProblemError, load_problem, target_speedup
from kernelevolve.report.bench import BenchReportError
from kernelevolve.report.html import REPORT, ReportError, write_bench_report
from kernelevolve.search import session
from kernelevolve.search.export import export
from kernelevolve.search.session import Limits, LLMSettings, RunSpec, SessionError
from kernelevolve.search.strategies import STRATEGIES
from kernelevolve.store.store import Store
from kernelevolve.suites import export_evaluation
from kernelevolve.suites.bench import (
    BenchItem,
    BenchRow,
    SuiteError,
    apply_target,
    discover,
    hbm_rule,
    kernelbench,
    markdown,
    roofline_rule,
    row_from,
)


@app.command("bench")
def bench_command(
    suite: str = typer.Argument(..., help="a folder of <name>/problem.py, a glob, 'ranking', or 'kernelbench'"),
    path: Path | None = typer.Option(None, "--path", help="kernelbench: the KernelBench checkout"),
    level: int = typer.Option(1, help="kernelbench: the level"),
    problems: str | None = typer.Option(None, "--problems", help="kernelbench: ids, e.g. 1-20,25"),
    only: str | None = typer.Option(None, "--only", help="comma-separated problem names of the suite to run"),
    no_search: bool = typer.Option(False, "--no-search", help="evaluate the seed kernels only"),
    budget: int = typer.Option(10, min=1, help="nodes per problem when searching"),
    time_s: float | None = typer.Option(
        None, "--time", min=1.0, help="seconds of search per problem (then the export is evaluated); default: none"
    ),
    strategy: str = typer.Option("greedy", help=f"search strategy: {', '.join(STRATEGIES)}"),
    llm: list[str] = LLM,
    llm_base_url: str | None = typer.Option(None, "--llm-base-url", envvar="KERNELEVOLVE_LLM_BASE_URL"),
    llm_timeout: float = LLM_TIMEOUT,
    max_inflight: int | None = MAX_INFLIGHT,
    no_seeds: bool = typer.Option(
        False, "--no-seeds", help="search from the problem alone: the suite's seed and candidate_* kernels are not used"
    ),
    target: Target | None = typer.Option(None, help="cpu, cuda or rocm; default cuda when a GPU is present"),
    out: Path = typer.Option(Path("bench"), "--out", help="folder for results.json and results.md"),
    runs_dir: Path = RUNS_DIR,
    trials: int = typer.Option(3, min=1),
    timeout: float = typer.Option(300.0, help="per-evaluation limit in seconds"),
    devices: str = typer.Option("0", help="GPU indices to search on, one worker each (e.g. 0,1,2,3)"),
    compile_timeout: float = typer.Option(
        600.0, help="per-evaluation limit on compiles (C++/CUDA extension builds, torch.compile), in seconds"
    ),
    baseline: Baseline = typer.Option(Baseline.eager),
    no_compile_baseline: bool = typer.Option(
        False, "--no-compile-baseline", help="never time torch.compile (by default: seeds and each search's best)"
    ),
    correctness: Correctness = CORRECTNESS,
    allow_tf32: bool = ALLOW_TF32,
    remeasure: bool = typer.Option(
        False,
        "--remeasure",
        help="evaluate finished searches' exported modules again (by default an unchanged module's evaluation, on "
        "the same options, harness, torch, Triton and device, is kept in its run and reused)",
    ),
) -> None:
    """Evaluate (or optimize) every problem of a suite; a failing problem is reported, not fatal."""
    tgt = (target.value if target else None) or default_target()
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
    if no_seeds:
        items = [replace(i, seed=None, starts=[]) for i in items]
    if no_search and any(i.seed is None for i in items) and not llm:
        missing = ", ".join(i.name for i in items if i.seed is None)
        err.print(f"note: no seed kernel for {missing}; they are reported as not evaluated")
    if not no_search and not llm and all(i.seed is None for i in items):
        raise usage_error("these problems have no seed kernels: searching them needs an LLM (--llm)")
    try:
        evaluators = make_evaluators(tgt, devices, timeout_s=timeout, compile_timeout_s=compile_timeout)
    except ValueError as e:
        raise usage_error(str(e)) from None
    out.mkdir(parents=True, exist_ok=True)
    store = Store(runs_dir)
    rows: list[BenchRow] = []
    started = time.strftime("%Y-%m-%d %H:%M")
    with (
        ExitStack() as stack,
        Progress(
            TextColumn("{task.description}"),
            BarColumn(),
            TextColumn("{task.completed}/{task.total}"),
            TimeElapsedColumn(),
            console=Console(stderr=True),
        ) as progress,
    ):
        for ev in evaluators:
            stack.callback(ev.close)
        task = progress.add_task("bench", total=len(items))
        for item in items:
            progress.update(task, description=f"{item.name}")
            if not progress.console.is_terminal:  # the bar is drawn only on a terminal: a line per problem
                progress.console.print(f"[{len(rows) + 1}/{len(items)}] {item.name}: started", markup=False)
            try:
                rows.append(
                    _one(
                        item,
                        store,
                        evaluators,
                        tgt,
                        no_search=no_search,
                        budget=budget,
                        time_s=time_s,
                        strategy=strategy,
                        llm=llm,
                        llm_base_url=llm_base_url,
                        llm_timeout=llm_timeout,
                        max_inflight=max_inflight,
                        trials=trials,
                        timeout=timeout,
                        baseline=baseline.value,
                        compile_baseline=not no_compile_baseline,
                        exports=out / "exports",
                        correctness=correctness.value,
                        allow_tf32=allow_tf32,
                        remeasure=remeasure,
                    )
                )
            except (ProblemError, SessionError, OSError) as e:
                rows.append(BenchRow(item.name, "problem_error", False, reason=str(e)))
            except Exception as e:  # noqa: BLE001 - one problem's failure is its row, not the end of the run
                rows.append(BenchRow(item.name, "error", False, reason=f"{type(e).__name__}: {e}"))
            r = rows[-1]
            progress.console.print(
                f"{item.name}: {r.status}"
                + (f" {r.speedup_eager:.2f}x" if r.speedup_eager else "")
                + (f" ({r.reason[:100]})" if r.reason and not r.correct else "")
                + (f" [search: {r.search}]" if r.search else ""),
                highlight=False,
            )
            progress.advance(task)
            # Rewritten after every problem: partial results survive a kill.
            text = _write(out, rows, suite, tgt, started, no_search, budget, strategy, time_s, runs_dir)
            _report(out, store, item.name)
    text = _write(out, rows, suite, tgt, started, no_search, budget, strategy, time_s, runs_dir)
    Console(soft_wrap=True).print(text, markup=False, highlight=False)
    err.print(f"wrote {out / 'results.json'}, {out / 'results.md'} and {out / REPORT}")
    waiting = [r for r in rows if r.status == "waiting"]
    if waiting:
        err.print(
            f"waiting: {len(waiting)} of {len(rows)} problems wait for the model's answers to "
            f"{sum(r.waiting for r in waiting)} calls (the first: {waiting[0].reason}); run the same bench command "
            "again once they are there: each run goes on where it stopped",
            highlight=False,
        )


def _write(
    out: Path,
    rows: list[BenchRow],
    suite: str,
    tgt: str,
    started: str,
    no_search: bool,
    budget: int,
    strategy: str,
    time_s: float | None,
    runs_dir: Path,
) -> str:
    limit = f", at most {time_s:g} s each" if time_s else ""
    header = (
        f"# {suite} on {tgt}: {'seeds only' if no_search else f'search, budget {budget}{limit}, {strategy}'}\n\n"
        f"{started}; `kernelevolve bench {suite}{' --no-search' if no_search else ''} --target {tgt}`"
    )
    (out / "results.json").write_text(
        json.dumps(
            {
                "suite": suite,
                "target": tgt,
                "date": started,
                "runs_dir": str(runs_dir.resolve()),  # where the rows' runs are: `kernelevolve report OUT` reads them
                "rows": [asdict(r) for r in rows],
                "roofline_rule": roofline_rule(rows),
                "hbm_rule": hbm_rule(rows),
            },
            indent=1,
        )
    )
    text = markdown(rows, header)
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


def _one(
    item: BenchItem,
    store: Store,
    evaluators: list[Evaluator],
    target: str,
    *,
    no_search: bool,
    budget: int,
    strategy: str,
    llm: list[str],
    llm_base_url: str | None,
    trials: int,
    timeout: float,
    baseline: str,
    compile_baseline: bool,
    exports: Path,
    time_s: float | None = None,
    correctness: str = "measured",
    allow_tf32: bool = False,
    llm_timeout: float = 300.0,
    max_inflight: int | None = None,
    remeasure: bool = False,
) -> BenchRow:
    """A search's row is its exported module's evaluation, with the torch.compile baseline the search ran without.
    The search is a run like optimize's (search/session.py): the same bench command again resumes it."""
    evaluator = evaluators[0]  # single evaluations; the search spreads over all of them, one per device
    problem = load_problem(item.problem)
    target_of = target_speedup(problem)  # read first: a malformed TARGET_SPEEDUP fails before the search
    options = EvalOptions(
        trials=trials,
        baseline=baseline,
        compile_baseline=None if compile_baseline else False,
        correctness=correctness,
        allow_tf32=allow_tf32,
    )
    if no_search:
        if item.seed is None:
            return BenchRow(item.name, "not_evaluated", False, reason="no seed kernel")
        result = evaluator.evaluate(problem, item.seed, options, copy_floor=True)
        return apply_target(row_from(item.name, result, seed=item.seed.name), target_of)
    spec = RunSpec(
        item.problem,
        item.seed,
        tuple(item.starts),
        target,
        strategy,
        trials,
        baseline,
        compile_baseline,
        llm=tuple(llm),
        tag="bench",
        correctness=correctness,
        allow_tf32=allow_tf32,
    )
    limits = Limits(budget=budget, time_s=time_s)
    opened = session.open_run(store, spec, limits)
    operator = session.llm_operator(opened, LLMSettings(llm_base_url, timeout_s=llm_timeout))
    driver = session.build_driver(opened, evaluators, llm=operator, warm_start=False, max_inflight=max_inflight)
    stopped = driver.run_search()
    outcome = session.finish(opened, stopped)
    searched = f"{outcome.evaluations} nodes; {stopped}"
    if outcome.waiting:  # one round done: the export is evaluated when the run is
        best = f"; best so far {outcome.best_fitness:.3g}x (node {outcome.best_node})" if outcome.best_node else ""
        row = BenchRow(item.name, "waiting", False, run=opened.run.id, reason=stopped, search=searched + best)
        row.waiting = outcome.waiting
        return row
    if outcome.best_node is None:
        nodes = store.nodes(opened.run.id)
        first = store.evaluation(nodes[0].id) if nodes else None
        why = f"; the seed: {first.status.value}: {first.reason}" if first is not None else ""
        return BenchRow(
            item.name,
            "no_correct_kernel",
            False,
            run=opened.run.id,
            reason=f"the search found no correct kernel{why}",
            search=searched,
        )
    # The deliverable is the exported module: each case dispatched to its fastest kernel, the reference where
    # none beat it. It calls the reference, so the kernel policy is off for it (its kernels passed it in the search).
    exported = exports / f"{item.name}.py"
    exported.parent.mkdir(parents=True, exist_ok=True)
    export(store, opened.run, exported)
    # copy_floor: the row's account of a missed target, the case's time beside a copy of its bytes
    source = exported.read_text()
    how = {**asdict(options), "require_kernel": False, "copy_floor": True}
    folder = store.runs_dir / opened.run.id
    kept = None if remeasure else export_evaluation.reusable(folder, source, how, environment.of(evaluator.platform))
    if kept is None:
        final = evaluator.evaluate(problem, exported, options, require_kernel=False, copy_floor=True)
        unkept = export_evaluation.keep(folder, source, how, final)
        if unkept:
            err.print(f"note: {item.name}: {unkept}", markup=False, highlight=False)
    else:
        final, when = kept
        searched += f"; the export's evaluation of {when} reused (--remeasure evaluates it again)"
    row = row_from(item.name, final, seed=item.seed.name if item.seed else "", run=opened.run.id, kernel=str(exported))
    row.search = searched
    return apply_target(row, target_of)
