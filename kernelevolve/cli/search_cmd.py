"""`kernelevolve optimize`, `runs`, `show` and `export`: the search and its records."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path

import typer
from rich.console import Console
from rich.live import Live
from rich.table import Table
from rich.text import Text

from kernelevolve.cli.common import (
    ALLOW_TF32,
    CORRECTNESS,
    DB,
    LLM,
    LLM_TIMEOUT,
    MAX_INFLIGHT,
    PROFILE_HELP,
    RUNS_DIR,
    Baseline,
    Correctness,
    Profile,
    Target,
    against_baseline,
    app,
    err,
    literal,
    plain_console,
    print_table,
    usage_error,
)
from kernelevolve.eval.service.pool import SharedPool
from kernelevolve.eval.service.workers import WORKERS_HELP, make_pool
from kernelevolve.platforms import default_target
from kernelevolve.problem.problem import ProblemError
from kernelevolve.search import session
from kernelevolve.search.driver import Progress, one_line
from kernelevolve.search.graph import Graph
from kernelevolve.search.ports import Propose
from kernelevolve.search.session import Limits, LLMSettings, RunSpec, SessionError
from kernelevolve.search.strategies import STRATEGIES
from kernelevolve.store.models import Run
from kernelevolve.store.store import Store, StoreError


def _open_store(runs_dir: Path, db: str | None) -> Store:
    try:
        return Store(runs_dir, db)
    except StoreError as e:
        raise usage_error(str(e)) from None


def _progress_table(p: Progress) -> Table:
    t = Table.grid(padding=(0, 2))
    fails = ", ".join(f"{k} {v}" for k, v in sorted(p.statuses.items()) if k != "ok") or "none"
    best = f"{p.best_fitness:.3f} (node {p.best_node})" if p.best_fitness else "-"
    remaining = f", {max(0.0, p.time_s - p.elapsed_s):.0f} s left" if p.time_s else ""
    t.add_row(
        f"nodes {p.nodes}/{p.budget}",
        f"in flight {p.inflight}",
        f"best fitness {best}",
        f"failures: {fails}",
        f"{p.elapsed_s:.0f} s{remaining}",
    )
    if p.message:
        t.add_row(Text(p.message, style="dim"))  # the message may hold a model's text: never markup
    return t


@contextmanager
def display(console: Console) -> Iterator[Callable[[Progress], None]]:
    """A live panel on a terminal; elsewhere (logs, CI) one line per finished node."""
    if console.is_terminal:
        with Live(console=console, auto_refresh=False) as live:
            yield lambda p: live.update(_progress_table(p), refresh=True)
        return
    last = [""]

    def line(p: Progress) -> None:
        if p.message and p.message != last[0]:
            last[0] = p.message
            best = f"{p.best_fitness:.3f}" if p.best_fitness else "-"
            console.print(f"[{p.nodes}/{p.budget}] {p.message} | best {best} | {p.elapsed_s:.0f} s")

    yield line


def _summary(store: Store, run: Run, console: Console, top: int = 5, every: bool = False) -> None:
    """The best correct nodes (with `every`: all nodes in order, failed ones with their reason), the lineage of
    the best and its speedup in words, nodes numbered within their run."""
    rows = store.nodes(run.id)
    graph = Graph.from_store(rows)
    step = {r.id: r.step for r in rows}
    reason = {r.id: r.reason for r in rows}

    def num(node_id: int) -> str:
        return str(step[node_id]) if node_id in step else f"id {node_id}"  # not of this run: the store's id

    shown = [graph.nodes[i] for i in graph.order] if every else sorted(graph.correct(), key=lambda n: -n.score)[:top]
    columns = ["node", "operator", "parents", "status", "fitness", "speedup", "params"] + (["reason"] if every else [])
    table = Table(*columns, title=f"run {run.id}" + (f": all {len(rows)} nodes" if every else ""))
    for n in shown:
        cells = [
            num(n.id),
            n.operator,
            ",".join(map(num, n.parents)) or "-",
            n.status,
            f"{n.fitness:.3f}" if n.fitness else "-",
            f"{n.speedup:.3f}x" if n.speedup else "-",
            json.dumps(n.params),
        ]
        if every:
            cells.append(one_line(reason[n.id], 100) or "-")
        table.add_row(*cells)
    print_table(console, table)
    best = graph.best()
    if best:
        lineage = " <- ".join(f"{num(i)} ({graph.nodes[i].operator})" for i in graph.ancestors(best.id))
        console.print(f"lineage of the best: {lineage}")
        baseline = json.loads(run.config).get("baseline", "eager")
        if best.speedup:
            console.print(f"best: node {num(best.id)}, {against_baseline(best.speedup, baseline)}")
    failed = len(rows) - len(graph.correct())
    if failed and not every:
        where = "" if store.runs_dir == Path("runs") else f" --runs-dir {store.runs_dir}"
        console.print(
            f"{failed} of {len(rows)} nodes not correct: `kernelevolve show {run.id}{where} --all` lists every node "
            f"with its reason, `--node N` shows one in full"
        )


# optimize's options, one constant each, so that the command's signature reads as a list.
PROBLEM = typer.Argument(None, help="problem file (not needed with --resume)")
SEED = typer.Option(None, "--seed", help="starting kernel (a candidate file); needed without --llm")
START = typer.Option(
    [], "--start", help="another starting kernel, evaluated after the seed (repeatable): one for some shapes"
)
STRATEGY = typer.Option("greedy", help=f"search strategy: {', '.join(STRATEGIES)}")
BUDGET = typer.Option(
    None, min=1, help=literal("nodes in the run, the seed included [default: 20; a resumed run: its own]")
)
TIME = typer.Option(None, "--time", help="search wall-time limit in seconds")
STALL = typer.Option(None, help="stop after this many nodes without improvement")
TARGET_SPEEDUP = typer.Option(None, "--target-speedup", help="stop once this speedup is reached")
TARGET = typer.Option(None, help="cpu, cuda or rocm; default cuda when a GPU is present")
RESUME = typer.Option(None, "--resume", help="continue this run")
JOIN = typer.Option(
    False,
    "--join",
    help="search the run beside the processes searching it already, sharing its budget (a PostgreSQL --db; "
    "docs/cli.md)",
)
JSON = typer.Option(False, "--json", help="print one JSON object on stdout at the end")
TIMEOUT = typer.Option(300.0, help="per-evaluation wall-clock limit in seconds")
COMPILE_TIMEOUT = typer.Option(
    600.0, help="per-evaluation limit on compiles (C++/CUDA extension builds, torch.compile), in seconds"
)
TRIALS = typer.Option(3, min=1, help="correctness trials per shape case")
BASELINE = typer.Option(Baseline.eager, help="the baseline fitness is measured against")
NO_COMPILE_BASELINE = typer.Option(False, "--no-compile-baseline", help="skip the torch.compile baseline")
RNG_SEED = typer.Option(0, "--rng-seed", help="seed of the strategy's and operator's choices")
DEVICES = typer.Option("0", help="GPU indices to evaluate on, one worker each (e.g. 0,1,2,3)")
WORKERS = typer.Option("local", "--workers", help=WORKERS_HELP)
LLM_BASE_URL = typer.Option(
    None, "--llm-base-url", envvar="KERNELEVOLVE_LLM_BASE_URL", help="endpoint of an OpenAI-compatible server"
)
MAX_COST = typer.Option(None, "--max-cost", help="stop when LLM calls have cost this many USD")
PRICES = typer.Option(None, "--prices", help="JSON price table (USD per million tokens)")
DRAFT_STEPS = typer.Option(3, help="LLM steps that draft independent kernels before refining")
DRY_RUN = typer.Option(False, "--dry-run", help="write the first prompt to a file and exit")
AGENT = typer.Option(False, "--agent", help="agentic mode: the model reads, edits and checks before submitting")
AGENT_BUDGET = typer.Option(8, help="with --agent: commands per step")
WARM_START = typer.Option(
    True, "--warm-start/--no-warm-start", help="start from the best kernels of similar earlier problems"
)
PROFILE = typer.Option(Profile.auto, help=PROFILE_HELP)
REPORT = typer.Option(False, "--report", help="when the run ends, write its HTML report to RUNS_DIR/RUN/report.html")


@dataclass(frozen=True)
class NewRun:
    """What optimize's options say of a run that is not resumed (search/session.py RunSpec)."""

    problem: Path | None
    seed: Path | None
    starts: tuple[Path, ...]
    target: Target | None
    strategy: str
    trials: int
    baseline: Baseline
    compile_baseline: bool
    rng_seed: int
    correctness: Correctness
    allow_tf32: bool

    def spec(self, llm: tuple[str, ...]) -> RunSpec:
        if self.problem is None:
            raise SessionError("optimize needs PROBLEM (or --resume RUN)")
        target = (self.target.value if self.target else None) or default_target()
        return RunSpec(
            self.problem,
            self.seed,
            self.starts,
            target,
            self.strategy,
            self.trials,
            self.baseline.value,
            self.compile_baseline,
            self.rng_seed,
            llm,
            correctness=self.correctness.value,
            allow_tf32=self.allow_tf32,
        )


@dataclass(frozen=True)
class Steering:
    """How the search is run, none of it part of the run's identity."""

    devices: str
    workers: str
    timeout: float
    compile_timeout: float
    draft_steps: int
    profile: Profile
    warm_start: bool
    max_inflight: int | None
    join: bool = False


@app.command("optimize")
def optimize_command(
    problem: Path | None = PROBLEM,
    seed: Path | None = SEED,
    start: list[Path] = START,
    strategy: str = STRATEGY,
    budget: int | None = BUDGET,
    time_limit: float | None = TIME,
    stall: int | None = STALL,
    target_speedup: float | None = TARGET_SPEEDUP,
    target: Target | None = TARGET,
    runs_dir: Path = RUNS_DIR,
    db: str | None = DB,
    resume: str | None = RESUME,
    join: bool = JOIN,
    as_json: bool = JSON,
    timeout: float = TIMEOUT,
    compile_timeout: float = COMPILE_TIMEOUT,
    trials: int = TRIALS,
    baseline: Baseline = BASELINE,
    no_compile_baseline: bool = NO_COMPILE_BASELINE,
    rng_seed: int = RNG_SEED,
    devices: str = DEVICES,
    workers: str = WORKERS,
    llm: list[str] = LLM,
    llm_timeout: float = LLM_TIMEOUT,
    max_inflight: int | None = MAX_INFLIGHT,
    llm_base_url: str | None = LLM_BASE_URL,
    max_cost: float | None = MAX_COST,
    # Limits not given again on a resume (--resume, or the same command re-run) are the run's own.
    prices: Path | None = PRICES,
    draft_steps: int = DRAFT_STEPS,
    dry_run: bool = DRY_RUN,
    agent: bool = AGENT,
    agent_budget: int = AGENT_BUDGET,
    warm_start: bool = WARM_START,
    profile: Profile = PROFILE,
    correctness: Correctness = CORRECTNESS,
    allow_tf32: bool = ALLOW_TF32,
    report: bool = REPORT,
) -> None:
    """Search for a faster kernel from --seed (tune operator) and/or with an LLM; resumable at any point."""
    store = _open_store(runs_dir, db)
    limits = Limits(budget, time_limit, stall, target_speedup, max_cost)
    settings = LLMSettings(llm_base_url, prices, llm_timeout, agent_budget if agent else 0)
    new = NewRun(
        problem, seed, tuple(start), target, strategy, trials, baseline, not no_compile_baseline, rng_seed,
        correctness, allow_tf32,
    )  # fmt: skip
    steering = Steering(
        devices, workers, timeout, compile_timeout, draft_steps, profile, warm_start, max_inflight, join
    )
    try:
        spec = _spec(store, resume, new, tuple(llm))
        if dry_run:
            _dry_run(store, spec, settings, runs_dir, steering)
        opened, operator, pool = _start(store, spec, limits, settings, steering, resume)
    except SessionError as e:
        raise usage_error(str(e)) from None
    outcome = _search(opened, operator, pool, steering, runs_dir)
    _finished(store, opened.run, outcome, report, as_json)


def _spec(store: Store, resume: str | None, new: NewRun, llm: tuple[str, ...]) -> RunSpec:
    """The resumed run's spec (with the models given now, if any), else the new run's."""
    if not resume:
        return new.spec(llm)
    spec = session.stored_spec(store, resume)
    return replace(spec, llm=llm) if llm else spec


def _dry_run(store: Store, spec: RunSpec, settings: LLMSettings, runs_dir: Path, steering: Steering) -> None:
    """Write the first prompt to RUNS_DIR/prompt-NAME.md and exit: nothing is called."""
    name, prompt = session.first_prompt(
        store, spec, settings, warm_start=steering.warm_start, profile=steering.profile.value
    )
    path = runs_dir / f"prompt-{name}.md"
    try:
        path.write_text(prompt)
    except OSError as e:
        raise SessionError(f"cannot write the prompt to {path}: {e.strerror}; pass a writable --runs-dir") from e
    err.print(f"wrote the first prompt to {path}; nothing was called")
    raise typer.Exit(0)


def _start(
    store: Store, spec: RunSpec, limits: Limits, settings: LLMSettings, steering: Steering, resume: str | None
) -> tuple[session.Session, Propose | None, SharedPool]:
    """The run opened, its model's operator and its evaluation pool; a run that cannot start is marked failed."""
    opened = session.open_run(store, spec, limits, run_id=resume, join=steering.join)
    with session.starting(opened):
        operator = session.llm_operator(opened, settings)
        try:
            pool = make_pool(
                spec.target,
                steering.workers,
                steering.devices,
                timeout_s=steering.timeout,
                compile_timeout_s=steering.compile_timeout,
            )
        except ValueError as e:
            raise SessionError(str(e)) from None
    what = f"run {opened.run.id} " + (f"resumed ({opened.stored_nodes} nodes stored)" if opened.resumed else "started")
    what += " (joined: searched beside other processes)" if steering.join else ""
    using = (
        f"LLM {', '.join(spec.llm)} and the tune operator"
        if spec.llm
        else "no LLM configured: using the tune operator only"
    )
    err.print(f"{what}; {using}")
    return opened, operator, pool


def _search(
    opened: session.Session,
    operator: Propose | None,
    pool: SharedPool,
    steering: Steering,
    runs_dir: Path,
) -> session.RunOutcome:
    """The search with its progress display, then what it leaves behind (session.finish); Ctrl-C exits 130."""
    console = plain_console(stderr=True)
    evaluators = pool.lanes()
    try:
        with display(console) as update:
            driver = session.build_driver(
                opened,
                evaluators,
                llm=operator,
                draft_steps=steering.draft_steps,
                profile=steering.profile.value,
                warm_start=steering.warm_start,
                on_update=update,
                max_inflight=steering.max_inflight,
            )
            for note in opened.notes:
                err.print(note)
            reason = driver.run_search()
        with console.status("finishing: lessons, and the best kernel against torch.compile where it was not timed"):
            return session.finish(opened, reason, evaluators[0])
    except ProblemError as e:
        raise usage_error(str(e)) from None
    except KeyboardInterrupt:
        err.print(f"interrupted; continue with: kernelevolve optimize --resume {opened.run.id} --runs-dir {runs_dir}")
        raise typer.Exit(130) from None
    finally:
        pool.close()


def _finished(store: Store, run: Run, outcome: session.RunOutcome, report: bool, as_json: bool) -> None:
    """Why it stopped, the report if asked, then the summary (or the JSON object); exits 1 without a result."""
    if outcome.waiting:
        err.print(f"waiting: {outcome.stop_reason}; run the same command again once the answers are there")
    else:
        err.print(f"stopped: {outcome.stop_reason}")
    if report:
        _write_report(store, run)
    if as_json:
        sys.stdout.write(json.dumps(outcome.to_json()) + "\n")
    else:
        out = plain_console()
        _summary(store, run, out)
        if outcome.final is not None:
            ratio = outcome.best_speedup_compile
            shown = (
                f"{ratio:.3g}x" if ratio else f"not measured ({outcome.final.compile_baseline or outcome.final.reason})"
            )
            out.print(f"best kernel against torch.compile: {shown}")
    raise typer.Exit(0 if outcome.best_node is not None or outcome.waiting else 1)


def _write_report(store: Store, run: Run) -> None:
    """The run's report; a failure to write it is said, not fatal: the search itself is done and stored."""
    from kernelevolve.report.html import REPORT, ReportError, write_run_report

    try:
        path = write_run_report(store, run, store.path(run.id) / REPORT)
    except ReportError as e:
        err.print(f"note: the report was not written: {e}; `kernelevolve report {run.id} --out FILE` writes it")
        return
    err.print(f"wrote the report {path}")


# `kernelevolve runs` lists; its subcommands (`runs rm`, cli/runs_cmd.py) act on runs.
runs_app = typer.Typer(no_args_is_help=False)
app.add_typer(runs_app, name="runs")


@runs_app.callback(invoke_without_command=True)
def runs_command(ctx: typer.Context, runs_dir: Path = RUNS_DIR, db: str | None = DB) -> None:
    """List runs: problem, platform, status, nodes, best fitness (`runs rm RUN` deletes one)."""
    if ctx.invoked_subcommand is not None:
        return
    store = _open_store(runs_dir, db)
    table = Table("problem", "platform", "strategy", "status", "nodes", "best fitness")
    table.add_column("run", no_wrap=True)
    for run, n, best in store.runs():
        config = json.loads(run.config)
        path = Path(run.problem_path)
        name = path.parent.name if path.name == "problem.py" else path.name
        table.add_row(
            name, run.platform, config.get("strategy", "-"), run.status, str(n), f"{best:.3f}" if best else "-", run.id
        )
    print_table(plain_console(), table)


@app.command("show")
def show_command(
    run_id: str = typer.Argument(..., help="run id (or a unique prefix)"),
    runs_dir: Path = RUNS_DIR,
    db: str | None = DB,
    top: int = typer.Option(10, help="how many of the best nodes"),
    every: bool = typer.Option(False, "--all", help="every node, failed ones included, with its status and reason"),
    node: int | None = typer.Option(
        None,
        "--node",
        min=1,
        help="one node, by its number within the run: its files, source, diff from its parent, evaluation, "
        "analysis, and for an LLM node the prompt and the answer",
    ),
    prompt: bool = typer.Option(
        False, "--prompt", help="with --node: only what the node's model saw (the prompt) and answered"
    ),
) -> None:
    """The best nodes of a run and the lineage of the best; every node with --all, one node's record with --node."""
    store = _open_store(runs_dir, db)
    run = store.get_run(run_id)
    if run is None:
        raise usage_error(f"no run {run_id!r} in {store.shown_url()}")
    if node is not None:
        if every:
            raise usage_error("--node shows one node, --all lists every node: give one of them")
        from kernelevolve.cli.node_view import show_node

        row = store.node_by_step(run.id, node)
        if row is None:
            count = len(store.nodes(run.id))
            raise usage_error(f"run {run.id} has no node {node} (its nodes are 1 to {count})")
        if prompt:
            from kernelevolve.cli.node_view import show_prompt

            show_prompt(store, run, row, plain_console())
            return
        show_node(store, run, row, plain_console())
        return
    if prompt:
        raise usage_error("--prompt shows one node's prompt: give --node N")
    out = plain_console()
    out.print(
        f"problem {run.problem_path}  platform {run.platform}  status {run.status}"
        + (f"  ({run.stop_reason})" if run.stop_reason else "")
    )
    _summary(store, run, out, top, every)
    usage = store.llm_usage(run.id)
    if usage:
        table = Table(
            "model",
            "calls",
            "failed",
            "prompt tokens",
            "completion tokens",
            "cost USD",
            "mean latency s",
            title="LLM calls",
        )
        for model, u in usage.items():
            table.add_row(
                model or "(unreached)",
                str(int(u["calls"])),
                str(int(u["failed"])),
                str(int(u["prompt_tokens"])),
                str(int(u["completion_tokens"])),
                f"{u['cost']:.4f}",
                f"{u['latency_s'] / u['calls']:.2f}",
            )
        print_table(out, table)


@app.command("export")
def export_command(
    run_id: str = typer.Argument(..., help="run id (or a unique prefix)"),
    out: Path | None = typer.Option(None, "--out", help="the module to write"),
    kernel_dir: Path | None = typer.Option(
        None, "--kernel-dir", help="ATen operator problems: write the operator's file into this kernel directory"
    ),
    runs_dir: Path = RUNS_DIR,
    db: str | None = DB,
) -> None:
    """Write the run's result as one module dispatching each shape case to its fastest correct kernel, or (with
    --kernel-dir) as its ATen operator's file of a kernel directory for kernelevolve.enable."""
    from kernelevolve.search.export import ExportError, export

    if (out is None) == (kernel_dir is None):
        raise usage_error("give one of --out FILE (a module) or --kernel-dir DIR (an ATen operator's kernel file)")
    store = _open_store(runs_dir, db)
    run = store.get_run(run_id)
    if run is None:
        raise usage_error(f"no run {run_id!r} in {store.shown_url()}")
    if kernel_dir is not None:
        return _export_kernel_dir(store, run, kernel_dir)
    try:
        choices = export(store, run, out)
    except (ExportError, ProblemError) as e:
        raise usage_error(str(e)) from None
    step = {n.id: n.step for n in store.nodes(run.id)}
    for i, c in enumerate(choices):
        err.print(f"case {i} {c.shape}: " + (f"node {step[c.node]} ({c.speedup:.2f}x)" if c.node else "reference"))
    err.print(f"wrote {out}")


def _export_kernel_dir(store: Store, run: Run, folder: Path) -> None:
    from kernelevolve.kernels.write import export_kernel_dir
    from kernelevolve.search.export import ExportError

    try:
        path, entry = export_kernel_dir(store, run, folder)
    except (ExportError, ProblemError) as e:
        raise usage_error(str(e)) from None
    if entry is None:
        err.print(f"no kernel beat the baseline on any case: nothing written, ATen serves {path.stem}")
        return
    for c in entry.dispatch:
        shape = " ".join(f"{k}={v}" for k, v in c["shape"].items()) or "-"
        err.print(f"case {shape}: node {c['node']} ({c['speedup']:.2f}x over eager)")
    err.print(f"wrote {path} ({entry.operator}; kernelevolve.enable({str(folder)!r}) runs it)")
