"""`kernelevolve optimize`, `runs`, `show` and `export`: the search and its records."""

from __future__ import annotations

import hashlib
import json
import random
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import typer
from rich.console import Console
from rich.live import Live
from rich.table import Table

from kernelevolve.agents import lessons
from kernelevolve.cli.common import Baseline, Target, app, err, usage_error
from kernelevolve.cli.eval_cmd import PROFILE_HELP, Profile
from kernelevolve.eval.evaluator import Evaluator
from kernelevolve.platforms import default_target
from kernelevolve.problem.problem import Problem, ProblemError, load_problem, source_hash
from kernelevolve.result import EvalResult
from kernelevolve.search.driver import Driver, Progress, SearchConfig
from kernelevolve.search.final_eval import compile_in_search, with_compile_baseline
from kernelevolve.search.graph import Graph
from kernelevolve.search.strategies import STRATEGIES, make_strategy
from kernelevolve.store.models import Run
from kernelevolve.store.store import Store, StoreError
from kernelevolve.suites.bench import row_from

RUNS_DIR = typer.Option(Path("runs"), "--runs-dir", help="where runs, their store and artifacts live")
DB = typer.Option(None, "--db", help="SQLAlchemy URL of the store (default: SQLite in the runs directory)")


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
        t.add_row(f"[dim]{p.message}[/]")
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
            console.print(f"[{p.nodes}/{p.budget}] {p.message} | best {best} | {p.elapsed_s:.0f} s", highlight=False)

    yield line


def _summary(store: Store, run: Run, console: Console, top: int = 5) -> None:
    graph = Graph.from_store(store.nodes(run.id))
    ranked = sorted(graph.correct(), key=lambda n: -n.score)[:top]
    table = Table("node", "operator", "parents", "status", "fitness", "speedup", "params", title=f"run {run.id}")
    for n in ranked:
        table.add_row(
            str(n.id),
            n.operator,
            ",".join(map(str, n.parents)) or "-",
            n.status,
            f"{n.fitness:.3f}" if n.fitness else "-",
            f"{n.speedup:.3f}x" if n.speedup else "-",
            json.dumps(n.params),
        )
    console.print(table)
    best = graph.best()
    if best:
        lineage = " <- ".join(f"{i} ({graph.nodes[i].operator})" for i in graph.ancestors(best.id))
        console.print(f"lineage of the best: {lineage}", highlight=False)


def llm_operator(
    specs: list[str], base_url: str | None, prices: Path | None, store: Store, problem, target: str, timeout: float
):
    """The universal operator over the ensemble the --llm specs name; usage errors for bad specs."""
    from kernelevolve.llm.base import LLMError
    from kernelevolve.llm.pricing import PriceTable
    from kernelevolve.llm.registry import Ensemble, make_client, parse_spec
    from kernelevolve.operators.universal import UniversalOperator
    from kernelevolve.platforms import get_platform

    try:
        table = PriceTable.load(prices)
        clients = []
        for spec in specs:
            provider, model, weight = parse_spec(spec)
            clients.append((make_client(provider, model, base_url=base_url, timeout_s=timeout, store=store), weight))
        unpriced = [c.name for c, _ in clients if not table.priced(c.name)]
        if unpriced:
            err.print(f"note: no price for {', '.join(unpriced)}: its cost is counted as 0 (see --prices)")
        return UniversalOperator(Ensemble(clients, random.Random(0)), problem, get_platform(target), prices=table)
    except (LLMError, ValueError) as e:
        raise usage_error(str(e)) from None


def _config_hash(config: dict) -> str:
    keyed = {k: v for k, v in config.items() if k not in ("budget", "time_s", "stall", "target_speedup")}
    return hashlib.sha256(json.dumps(keyed, sort_keys=True).encode()).hexdigest()[:16]


@app.command("optimize")
def optimize_command(
    problem: Path | None = typer.Argument(None, help="problem file (not needed with --resume)"),
    seed: Path | None = typer.Option(None, "--seed", help="starting kernel (a candidate file); needed without --llm"),
    start: list[Path] = typer.Option(
        [],
        "--start",
        help="another starting kernel, evaluated after the seed (repeatable): one for some shapes",
    ),
    strategy: str = typer.Option("greedy", help=f"search strategy: {', '.join(STRATEGIES)}"),
    budget: int = typer.Option(20, min=1, help="nodes in the run, the seed included"),
    time_limit: float | None = typer.Option(None, "--time", help="search wall-time limit in seconds"),
    stall: int | None = typer.Option(None, help="stop after this many nodes without improvement"),
    target_speedup: float | None = typer.Option(None, "--target-speedup", help="stop once this speedup is reached"),
    target: Target | None = typer.Option(None, help="cpu, cuda or rocm; default cuda when a GPU is present"),
    runs_dir: Path = RUNS_DIR,
    db: str | None = DB,
    resume: str | None = typer.Option(None, "--resume", help="continue this run"),
    as_json: bool = typer.Option(False, "--json", help="print one JSON object on stdout at the end"),
    timeout: float = typer.Option(300.0, help="per-evaluation wall-clock limit in seconds"),
    trials: int = typer.Option(3, min=1, help="correctness trials per shape case"),
    baseline: Baseline = typer.Option(Baseline.eager, help="the baseline fitness is measured against"),
    no_compile_baseline: bool = typer.Option(False, "--no-compile-baseline", help="skip the torch.compile baseline"),
    rng_seed: int = typer.Option(0, "--rng-seed", help="seed of the strategy's and operator's choices"),
    devices: str = typer.Option("0", help="GPU indices to evaluate on, one worker each (e.g. 0,1,2,3)"),
    llm: list[str] = typer.Option(
        [],
        "--llm",
        envvar="KERNELEVOLVE_LLM",
        help="PROVIDER:MODEL[=WEIGHT], repeatable (an ensemble): openai, anthropic, vllm, sglang, ollama, "
        "lmstudio, or replay:RUN",
    ),
    llm_base_url: str | None = typer.Option(
        None, "--llm-base-url", envvar="KERNELEVOLVE_LLM_BASE_URL", help="endpoint of an OpenAI-compatible server"
    ),
    max_cost: float | None = typer.Option(None, "--max-cost", help="stop when LLM calls have cost this many USD"),
    prices: Path | None = typer.Option(None, "--prices", help="JSON price table (USD per million tokens)"),
    draft_steps: int = typer.Option(3, help="LLM steps that draft independent kernels before refining"),
    dry_run: bool = typer.Option(False, "--dry-run", help="write the first prompt to a file and exit"),
    agent: bool = typer.Option(
        False, "--agent", help="agentic mode: the model reads, edits and checks before submitting"
    ),
    agent_budget: int = typer.Option(8, help="with --agent: commands per step"),
    warm_start: bool = typer.Option(
        True, "--warm-start/--no-warm-start", help="start from the best kernels of similar earlier problems"
    ),
    profile: Profile = typer.Option(Profile.auto, help=PROFILE_HELP),
) -> None:
    """Search for a faster kernel from --seed (tune operator) and/or with an LLM; resumable at any point."""
    store = _open_store(runs_dir, db)
    if resume:
        run = store.get_run(resume)
        if run is None:
            raise usage_error(f"no run {resume!r} in {store.url}; `kernelevolve runs` lists them")
        config = json.loads(run.config)
        problem_path = Path(config["problem"])
        seed_path = Path(config["seed"]) if config.get("seed") else None
        start = [Path(s) for s in config.get("starts", [])]
        llm = llm or config.get("llm", [])
    else:
        if problem is None:
            raise usage_error("optimize needs PROBLEM (or --resume RUN)")
        if seed is None and not llm:
            raise usage_error("without an LLM (--llm) the search needs a starting kernel: --seed KERNEL")
        problem_path, seed_path = problem, seed
    try:
        prob = load_problem(problem_path)
    except ProblemError as e:
        raise usage_error(str(e)) from None
    if seed_path is not None and not seed_path.is_file():
        raise usage_error(f"{seed_path}: no such seed kernel")
    seed_source = seed_path.read_text() if seed_path is not None else None
    missing = [str(path) for path in start if not path.is_file()]
    if missing:
        raise usage_error(f"{', '.join(missing)}: no such starting kernel")
    starts = [(path.name, path.read_text()) for path in start]
    tgt = config["target"] if resume else (target.value if target else None) or default_target()
    operator = llm_operator(llm, llm_base_url, prices, store, prob, tgt, timeout) if llm else None
    if operator is not None and agent:
        operator.agent_budget = agent_budget
    if dry_run:
        path = runs_dir / f"prompt-{prob.name}.md"
        if operator is None:
            raise usage_error("--dry-run shows the LLM's first prompt: give --llm")
        messages = operator.messages(None)
        path.write_text("\n\n".join(f"## {m.role}\n\n{m.content}" for m in messages))
        err.print(f"wrote the first prompt to {path}; nothing was called")
        raise typer.Exit(0)
    if not resume:
        if strategy not in STRATEGIES:
            raise usage_error(f"unknown strategy {strategy!r}: choose one of {', '.join(STRATEGIES)}")
        config = {
            "problem": str(prob.path),
            "problem_hash": prob.hash,
            "seed": str(seed_path.resolve()) if seed_path else None,
            "seed_hash": source_hash(seed_source) if seed_source else None,
            **({"starts": [str(path.resolve()) for path in start]} if start else {}),
            "target": tgt,
            "strategy": strategy,
            "trials": trials,
            "baseline": baseline.value,
            "compile_baseline": not no_compile_baseline,
            "rng_seed": rng_seed,
            "llm": sorted(llm),
            "signature": lessons.signature(prob.source),
        }
    config.update(budget=budget, time_s=time_limit, stall=stall, target_speedup=target_speedup)
    chash = _config_hash(config)
    run = store.get_run(resume) if resume else store.find_resumable(chash)
    if run is None:
        run = store.create_run(
            problem_path=str(prob.path),
            problem_hash=prob.hash,
            platform=config["target"],
            config=config,
            config_hash=chash,
            budget=budget,
        )
        what = f"run {run.id} started"
    else:
        store.update_run(run.id, config=json.dumps(config, sort_keys=True))
        what = f"run {run.id} resumed ({len(store.nodes(run.id))} nodes stored)"
    using = f"LLM {', '.join(llm)} and the tune operator" if llm else "no LLM configured: using the tune operator only"
    err.print(f"{what}; {using}", highlight=False)

    rng = random.Random(f"{config['rng_seed']}:{len(store.nodes(run.id))}")
    strat = make_strategy(config["strategy"], rng, json.loads(run.strategy_state or "{}"))
    search = SearchConfig(
        budget=budget,
        time_s=time_limit,
        stall=stall,
        target_speedup=target_speedup,
        max_cost=max_cost,
        draft_steps=draft_steps,
        trials=config["trials"],
        baseline=config["baseline"],
        compile_baseline=compile_in_search(config["baseline"], None if config["compile_baseline"] else False),
        profile=profile.value,
    )
    try:
        indices = [int(d) for d in devices.split(",")] if config["target"] != "cpu" else [0]
    except ValueError:
        raise usage_error(f"--devices must be comma-separated GPU indices, not {devices!r}") from None
    evaluators = [Evaluator(config["target"], timeout_s=timeout, prestart=True, device_index=i) for i in indices]
    past = []
    if warm_start and not store.nodes(run.id):
        past = lessons.similar_best(store, prob.source, config["target"], exclude_run=run.id)
        for k in past:
            err.print(
                f"warm start: run {k.run_id}'s best kernel (node {k.node_id}, {k.problem}, fitness "
                f"{k.fitness:.3f}, similarity {k.similarity:.2f})",
                highlight=False,
            )
    console = Console(stderr=True)
    try:
        with display(console) as update:
            driver = Driver(
                store,
                run,
                prob,
                seed_source,
                strat,
                evaluators,
                search,
                rng,
                on_update=update,
                llm=operator,
                warm_start=past,
                starts=starts,
            )
            reason = driver.run_search()
        final = _final_with_compile(store, run, prob, config, evaluators[0], console)
    except ProblemError as e:
        raise usage_error(str(e)) from None
    except KeyboardInterrupt:
        err.print(f"interrupted; continue with: kernelevolve optimize --resume {run.id} --runs-dir {runs_dir}")
        raise typer.Exit(130) from None
    finally:
        for ev in evaluators:
            ev.close()
    err.print(f"stopped: {reason}", highlight=False)
    graph = Graph.from_store(store.nodes(run.id))
    best = graph.best()
    seed_node = graph.nodes[graph.order[0]] if graph.order else None
    if as_json:
        best_row = next((n for n in store.nodes(run.id) if best and n.id == best.id), None)
        out = {
            "run": run.id,
            "evaluations": len(graph),
            "stop_reason": reason,
            "seed_fitness": seed_node.fitness if seed_node else None,
            "best_fitness": best.fitness if best else None,
            "best_speedup": best.speedup if best else None,
            "best_node": best.id if best else None,
            "best_kernel": str(store.path(best_row.kernel_path).resolve()) if best_row else None,
            "best_speedup_compile": _compile_speedup(final),
            "llm_calls": sum(int(u["calls"]) for u in store.llm_usage(run.id).values()),
            "llm_cost": sum(u["cost"] for u in store.llm_usage(run.id).values()),
        }
        sys.stdout.write(json.dumps(out) + "\n")
    else:
        _summary(store, run, Console())
        if final is not None:
            ratio = _compile_speedup(final)
            shown = f"{ratio:.3g}x" if ratio else f"not measured ({final.compile_baseline or final.reason})"
            Console().print(f"best kernel against torch.compile: {shown}", highlight=False)
    raise typer.Exit(0 if best else 1)


def _final_with_compile(
    store: Store, run: Run, prob: Problem, config: dict, evaluator: Evaluator, console: Console
) -> EvalResult | None:
    """The best kernel evaluated once with the torch.compile baseline the search ran without (search/final_eval);
    written beside the run's nodes as best_with_compile.json."""
    best = Graph.from_store(store.nodes(run.id)).best()
    row = next((n for n in store.nodes(run.id) if best and n.id == best.id), None)
    if row is None:
        return None
    with console.status("evaluating the best kernel against torch.compile"):
        final = with_compile_baseline(
            evaluator,
            prob,
            store.path(row.kernel_path),
            trials=config["trials"],
            baseline=config["baseline"],
            compile_baseline=None if config["compile_baseline"] else False,
        )
    if final is not None:
        store.path(run.id).mkdir(parents=True, exist_ok=True)
        store.path(f"{run.id}/best_with_compile.json").write_text(final.model_dump_json(indent=1, exclude={"log_tail"}))
    return final


def _compile_speedup(result: EvalResult | None) -> float | None:
    """Geometric mean over the cases of the compiled baseline's time over the kernel's (None where not timed)."""
    return row_from("best", result).speedup_compile if result is not None else None


@app.command("runs")
def runs_command(runs_dir: Path = RUNS_DIR, db: str | None = DB) -> None:
    """List runs: problem, platform, status, nodes, best fitness."""
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
    Console().print(table)


@app.command("show")
def show_command(
    run_id: str = typer.Argument(..., help="run id (or a unique prefix)"),
    runs_dir: Path = RUNS_DIR,
    db: str | None = DB,
    top: int = typer.Option(10, help="how many of the best nodes"),
) -> None:
    """The best nodes of a run and the lineage of the best."""
    store = _open_store(runs_dir, db)
    run = store.get_run(run_id)
    if run is None:
        raise usage_error(f"no run {run_id!r} in {store.url}")
    Console().print(
        f"problem {run.problem_path}  platform {run.platform}  status {run.status}"
        + (f"  ({run.stop_reason})" if run.stop_reason else ""),
        highlight=False,
    )
    _summary(store, run, Console(), top)
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
        Console().print(table)


@app.command("export")
def export_command(
    run_id: str = typer.Argument(..., help="run id (or a unique prefix)"),
    out: Path = typer.Option(..., "--out", help="the module to write"),
    runs_dir: Path = RUNS_DIR,
    db: str | None = DB,
) -> None:
    """Write the run's result as one module dispatching each shape case to its fastest correct kernel."""
    from kernelevolve.search.export import export

    store = _open_store(runs_dir, db)
    run = store.get_run(run_id)
    if run is None:
        raise usage_error(f"no run {run_id!r} in {store.url}")
    choices = export(store, run, out)
    for i, c in enumerate(choices):
        err.print(
            f"case {i} {c.shape}: " + (f"node {c.node} ({c.speedup:.2f}x)" if c.node else "reference"), highlight=False
        )
    err.print(f"wrote {out}")
