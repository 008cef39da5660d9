"""The engine's front door: a run specified, opened (created or resumed), searched and finished.

Every way of running a search (`optimize`, `bench`, the benchmark scripts, the tests) goes through here, so a run
means the same thing everywhere: `RunSpec` is what identifies it (its `identity()` finds it again, so re-running
the same command resumes), `Limits` are how far it may go (raised on a resume), and `finish` writes what a run
leaves behind: lessons for later runs, the best kernel against torch.compile where the search ran without it,
and the outcome `optimize --json` prints.
"""

from __future__ import annotations

import hashlib
import json
import os
import random
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

from kernelevolve.agents import lessons
from kernelevolve.agents.context import MemoryAgent, knowledge_base
from kernelevolve.eval.wire import BASELINES, CORRECTNESS, EvalOptions, Profile
from kernelevolve.operators.tune import TuneOperator
from kernelevolve.platforms import PLATFORMS, device_present, get_platform
from kernelevolve.problem.problem import Problem, ProblemError, load_problem, source_hash
from kernelevolve.result import EvalResult
from kernelevolve.search import run_lock
from kernelevolve.search.driver import Driver, Progress, Root, SearchConfig
from kernelevolve.search.graph import Graph
from kernelevolve.search.ports import Defer, Evaluate, Propose
from kernelevolve.search.strategies import STRATEGIES, make_strategy
from kernelevolve.store.models import Run
from kernelevolve.store.store import Store, StoreError

LIMIT_KEYS = ("budget", "time_s", "stall", "target_speedup", "max_cost")  # stored with a run, not its identity
DEFAULT_BUDGET = 20


class SessionError(Exception):
    """A run that cannot be opened as specified (a missing file, an unknown run or option): the CLI exits 2."""


@dataclass(frozen=True)
class RunSpec:
    """Everything that identifies a run: the same spec finds the same run again."""

    problem: Path
    seed: Path | None = None
    starts: tuple[Path, ...] = ()
    target: str = "cpu"
    strategy: str = "greedy"
    trials: int = 3
    baseline: str = "eager"
    compile_baseline: bool = True  # False: never time torch.compile (--no-compile-baseline)
    rng_seed: int = 0
    llm: tuple[str, ...] = ()  # PROVIDER:MODEL[=WEIGHT] specs, or replay:RUN
    tag: str = ""  # a runner's own runs kept apart from optimize's ("bench")
    correctness: str = "measured"  # the rule outputs are judged by (eval/wire.py CORRECTNESS)
    allow_tf32: bool = False

    def check(self, *, device: bool = True) -> None:
        """device=False: a GPU target is not refused on a machine without one (a dry run calls nothing)."""
        if self.target not in PLATFORMS:
            raise SessionError(f"unknown target {self.target!r}: choose one of {', '.join(PLATFORMS)}")
        if device and not device_present(self.target):
            raise SessionError(
                f"target {self.target!r} needs a GPU, and this machine has none (no {self.target} driver loaded); "
                "use --target cpu, or run on a machine with the GPU"
            )
        if PLATFORMS[self.target].separate_device():
            try:
                PLATFORMS[self.target].candidate_in_judge()
            except ValueError as e:
                raise SessionError(str(e)) from None
        if self.strategy not in STRATEGIES:
            raise SessionError(f"unknown strategy {self.strategy!r}: choose one of {', '.join(STRATEGIES)}")
        if self.baseline not in BASELINES:
            raise SessionError(f"unknown baseline {self.baseline!r}: choose one of {', '.join(BASELINES)}")
        if self.correctness not in CORRECTNESS:
            raise SessionError(f"unknown correctness rule {self.correctness!r}: choose one of {', '.join(CORRECTNESS)}")
        if self.seed is None and not self.llm:
            raise SessionError("without an LLM (--llm) the search needs a starting kernel: --seed KERNEL")
        if self.seed is not None and not self.seed.is_file():
            raise SessionError(f"{self.seed}: no such seed kernel")
        missing = [str(path) for path in self.starts if not path.is_file()]
        if missing:
            raise SessionError(f"{', '.join(missing)}: no such starting kernel")

    def config(self, problem: Problem) -> dict[str, Any]:
        """The run's stored configuration (the store's `runs.config`), limits aside."""
        seed_source = self.seed.read_text() if self.seed else None
        return {
            "problem": str(problem.path),
            "problem_hash": problem.hash,
            "seed": str(self.seed.resolve()) if self.seed else None,
            "seed_hash": source_hash(seed_source) if seed_source else None,
            **({"starts": [str(path.resolve()) for path in self.starts]} if self.starts else {}),
            "target": self.target,
            "strategy": self.strategy,
            "trials": self.trials,
            "baseline": self.baseline,
            "compile_baseline": self.compile_baseline,
            "rng_seed": self.rng_seed,
            "llm": sorted(self.llm),
            "signature": lessons.signature(problem.source),
            **({"tag": self.tag} if self.tag else {}),
            # Stored only where they differ from the defaults, so runs opened before they existed are found again.
            **({"correctness": self.correctness} if self.correctness != "measured" else {}),
            **({"allow_tf32": True} if self.allow_tf32 else {}),
        }

    def identity(self, problem: Problem) -> str:
        return _identity(self.config(problem))

    @classmethod
    def stored(cls, run: Run) -> RunSpec:
        """The spec a stored run was opened with (what `--resume RUN` continues)."""
        c = json.loads(run.config)
        return cls(
            problem=Path(c["problem"]),
            seed=Path(c["seed"]) if c.get("seed") else None,
            starts=tuple(Path(s) for s in c.get("starts", [])),
            target=c["target"],
            strategy=c.get("strategy", "greedy"),
            trials=c.get("trials", 3),
            baseline=c.get("baseline", "eager"),
            compile_baseline=c.get("compile_baseline", True),
            rng_seed=c.get("rng_seed", 0),
            llm=tuple(c.get("llm", [])),
            tag=c.get("tag", ""),
            correctness=c.get("correctness", "measured"),
            allow_tf32=c.get("allow_tf32", False),
        )


@dataclass(frozen=True)
class Limits:
    """How far a run may go. None: not asked for; a resumed run keeps its stored value, a new one the default
    (20 nodes, no other limit). A resume with larger limits extends the run."""

    budget: int | None = None  # nodes, the seed included
    time_s: float | None = None  # seconds of search, summed over sessions
    stall: int | None = None  # nodes without improvement
    target_speedup: float | None = None
    max_cost: float | None = None  # USD of LLM calls

    def over(self, stored: dict[str, Any] | None) -> Limits:
        """These limits where asked for, the stored run's elsewhere, then the defaults."""
        values = {k: (stored or {}).get(k) for k in LIMIT_KEYS}
        values.update({k: getattr(self, k) for k in LIMIT_KEYS if getattr(self, k) is not None})
        values["budget"] = values["budget"] or DEFAULT_BUDGET
        return Limits(**values)


@dataclass
class LLMSettings:
    """How the model is reached; none of it changes what the run is."""

    base_url: str | None = None
    prices: Path | None = None
    timeout_s: float = 300.0
    agent_budget: int = 0  # > 0: agentic mode


@dataclass
class Session:
    store: Store
    run: Run
    spec: RunSpec
    problem: Problem
    resumed: bool
    stored_nodes: int
    limits: Limits  # as resolved: asked for, else the stored run's, else the defaults
    notes: list[str] = field(default_factory=list)  # what the user should hear (unpriced models, warm starts)
    joined: bool = False  # searched beside other processes (--join)


def _identity(config: dict[str, Any]) -> str:
    keyed = {k: v for k, v in config.items() if k not in LIMIT_KEYS and k != "lessons"}
    return hashlib.sha256(json.dumps(keyed, sort_keys=True).encode()).hexdigest()[:16]


def load(path: Path) -> Problem:
    try:
        return load_problem(path)
    except ProblemError as e:
        raise SessionError(str(e)) from None


PROBLEM_COPY = "problem.py"  # the run's problem, kept in the store: RUN/problem.py


def stored_spec(store: Store, run_id: str) -> RunSpec:
    """The run's spec; where this machine lacks its problem file (a process on another machine started the run),
    the copy the store keeps (`PROBLEM_COPY`), written under this runs directory."""
    run = store.get_run(run_id)
    if run is None:
        raise SessionError(f"no run {run_id!r} in {store.shown_url()}; `kernelevolve runs` lists them")
    spec = RunSpec.stored(run)
    if spec.problem.is_file():
        return spec
    copy = f"{run.id}/{PROBLEM_COPY}"
    try:
        store.read(copy)
    except (OSError, StoreError):
        return spec  # a run from before the store kept its problem: loading it says what is missing
    return replace(spec, problem=store.path(copy))


def open_run(
    store: Store, spec: RunSpec, limits: Limits = Limits(), *, run_id: str | None = None, join: bool = False
) -> Session:
    """The run this spec identifies, resumed if it exists (or the run `run_id` names), else created; limits not
    asked for are the resumed run's own. join: search it beside the processes searching it already (a store
    several processes write, PostgreSQL; docs/cli.md), without the run's lock."""
    spec.check()
    if join and store.single_writer:
        raise SessionError(
            "--join searches a run with several processes at once, which needs a store they can all write: "
            "--db postgresql://USER@HOST/DB (SQLite takes one searching process per run)"
        )
    problem = load(spec.problem)
    config = spec.config(problem)
    identity = _identity(config)
    try:
        run = store.get_run(run_id) if run_id else store.find_resumable(identity)
        if run_id and run is None:
            raise SessionError(f"no run {run_id!r} in {store.shown_url()}; `kernelevolve runs` lists them")
        if run is None:
            resolved = limits.over(None)
            run = store.create_run(
                problem_path=str(problem.path),
                problem_hash=problem.hash,
                platform=spec.target,
                config={**config, **asdict(resolved)},
                config_hash=identity,
                budget=resolved.budget,
            )
            store.put(f"{run.id}/{PROBLEM_COPY}", problem.source)  # for processes that join from elsewhere
            _hold(store, run.id, join)
            return Session(store, run, spec, problem, resumed=False, stored_nodes=0, limits=resolved, joined=join)
        _hold(store, run.id, join)  # before the resumed run's config is touched
        kept = json.loads(run.config)
        resolved = limits.over(kept)
        # The problem's path stays the one the run was started with (a joined process may read the store's copy).
        where = {"problem": kept["problem"]} if "problem" in kept else {}
        store.update_run(run.id, config=json.dumps({**kept, **config, **where, **asdict(resolved)}, sort_keys=True))
    except StoreError as e:
        raise SessionError(str(e)) from None
    nodes = len(store.nodes(run.id))
    return Session(store, run, spec, problem, resumed=True, stored_nodes=nodes, limits=resolved, joined=join)


def _hold(store: Store, run_id: str, join: bool) -> None:
    """The run's lock taken, unless this process joins the others searching it (--join)."""
    if join:
        return
    try:
        run_lock.hold(store.runs_dir / run_id, run_id)
    except run_lock.RunInUse as e:
        if store.single_writer:
            raise SessionError(str(e)) from None
        raise SessionError(f"{e}; or add --join to search it beside that process (docs/cli.md)") from None
    except OSError as e:
        raise SessionError(f"cannot lock run {run_id} under {store.runs_dir}: {e.strerror or e}") from None


@contextmanager
def starting(session: Session) -> Iterator[Session]:
    """What must work before the search starts (the model's client and its key, the evaluators): on a failure a
    new run is marked `failed` with the reason, so `runs` and `serve` show no search that is not there, and the
    run is released (docs/cli.md, "Stopping")."""
    try:
        yield session
    except BaseException as e:
        if not session.resumed:
            reason = f"did not start: {str(e) or type(e).__name__}"
            session.store.update_run(session.run.id, status="failed", stop_reason=reason)
        run_lock.release(session.store.runs_dir / session.run.id)
        raise


def llm_operator(session: Session, settings: LLMSettings) -> Propose | None:
    """The model's operator the spec's --llm names: replay of a recorded run, or the universal operator over an
    ensemble of clients; None without --llm. A client without its API key is refused here, before any step."""
    operator = _llm(session.store, session.spec, session.problem, settings, session.notes, check_keys=True)
    if session.joined and isinstance(operator, Defer):  # each process would serve the same waiting calls
        raise SessionError(
            f"--join needs a model that answers within the session: {', '.join(session.spec.llm)} answers later "
            "(inbox:, batch), and its waiting calls belong to one process; search this run without --join"
        )
    if operator is not None and hasattr(operator, "call_prefix"):
        operator.call_prefix = f"{session.problem.name}-{session.run.id}-"
    return operator


def _llm(
    store: Store, spec: RunSpec, problem: Problem, settings: LLMSettings, notes: list[str], *, check_keys: bool = False
) -> Any:
    from kernelevolve.llm.base import LLMError
    from kernelevolve.llm.pricing import PriceTable
    from kernelevolve.llm.registry import Ensemble, make_client, parse_spec
    from kernelevolve.operators.universal import UniversalOperator

    if not spec.llm:
        return None
    platform = get_platform(spec.target)
    try:
        parsed = [parse_spec(s) for s in spec.llm]
        replays = [model for provider, model, _ in parsed if provider == "replay"]
        if replays:
            from kernelevolve.operators.replay import ReplayOperator

            if len(parsed) > 1:
                raise SessionError("replay:RUN serves one recorded run's answers: give it as the only --llm")
            return ReplayOperator(store, replays[0], problem, platform)
        table = PriceTable.load(settings.prices)
        clients = [
            (make_client(p, m, base_url=settings.base_url, timeout_s=settings.timeout_s), w) for p, m, w in parsed
        ]
        for client, _ in clients if check_keys else []:
            client.check_key()
    except (LLMError, ValueError, StoreError) as e:
        raise SessionError(str(e)) from None
    unpriced = [c.name for c, _ in clients if not table.priced(c.name)]
    if unpriced:
        notes.append(f"note: no price for {', '.join(unpriced)}: its cost is counted as 0 (see --prices)")
    return UniversalOperator(
        Ensemble(clients, random.Random(0)), problem, platform, prices=table, agent_budget=settings.agent_budget
    )


def first_prompt(
    store: Store, spec: RunSpec, settings: LLMSettings, *, warm_start: bool = True, profile: Profile = "auto"
) -> tuple[str, str]:
    """The problem's name and the prompt a new run's first step sends, built as build_driver and
    Driver._request build it: the same operator with the run's evaluation options (correctness rule, trials,
    TF32, kernel policy), the same memory agent (warm start, deep search, the reference's operations) and the
    first draft's request. Nothing is called or stored."""
    from kernelevolve.llm.base import render
    from kernelevolve.operators.base import Request

    spec.check(device=False)
    problem = load(spec.problem)
    operator = _llm(store, spec, problem, settings, [])
    if operator is None:
        raise SessionError("--dry-run shows the LLM's first prompt: give --llm")
    getattr(operator, "inner", operator).options = search_options(spec, profile)
    past = lessons.similar_best(store, problem.source, spec.target) if warm_start else []
    memory = MemoryAgent(
        store,
        problem.name,
        spec.target,
        warm_start=past,
        knowledge=knowledge_base(),
        problem_source=problem.source,
    )
    request = Request([], context=memory.prompt(None), draft_index=1, seq=1)
    return problem.name, render(operator.messages_for(request))


def compile_in_search(baseline: str, compile_baseline: bool) -> bool | None:
    """The evaluator's compile_baseline for the search's nodes: needed only when fitness is measured against it
    (compiling and checking it costs seconds per evaluation on a GPU; docs/benchmarks/harness.md)."""
    if not compile_baseline:
        return False
    return None if baseline == "compile" else False


def search_options(spec: RunSpec, profile: Profile = "auto") -> EvalOptions:
    return EvalOptions(
        trials=spec.trials,
        baseline=spec.baseline,
        compile_baseline=compile_in_search(spec.baseline, spec.compile_baseline),
        profile=profile,
        correctness=spec.correctness,
        allow_tf32=spec.allow_tf32,
    )


def build_driver(
    session: Session,
    evaluators: list[Evaluate],
    *,
    llm: Propose | None = None,
    draft_steps: int = 3,
    profile: Profile = "auto",
    warm_start: bool = True,
    on_update: Callable[[Progress], None] | None = None,
    confirm_best: bool = True,
    max_inflight: int | None = None,
) -> Driver:
    """The driver over the session's run: strategy from its stored state, RNG seeded by the nodes stored (a resume
    does not replay the first session's choices), the seed and starting kernels as roots, and, for a new run, the
    best kernels of similar earlier problems (warm start)."""
    spec, store, run, limits = session.spec, session.store, session.run, session.limits
    # A joined process draws its own choices: the same seed as another process's would propose the same kernels.
    rng = random.Random(f"{spec.rng_seed}:{session.stored_nodes}" + (f":{os.getpid()}" if session.joined else ""))
    strategy = make_strategy(spec.strategy, rng, json.loads(run.strategy_state or "{}"))
    roots = []
    if spec.seed is not None:
        roots.append(Root("seed", spec.seed.read_text(), "evaluating the seed kernel"))
    for path in spec.starts:
        roots.append(Root("start", path.read_text(), f"evaluating the starting kernel {path.name}"))
    past = []
    if warm_start and not session.stored_nodes:
        past = lessons.similar_best(store, session.problem.source, spec.target, exclude_run=run.id)
        for k in past:
            session.notes.append(
                f"warm start: run {k.run_id}'s best kernel (node {store.node(k.node_id).step}, {k.problem}, fitness "
                f"{k.fitness:.3f}, similarity {k.similarity:.2f})"
            )
            roots.append(Root("warm-start", k.source, f"warm start: evaluating run {k.run_id}'s best kernel"))
    memory = MemoryAgent(
        store,
        session.problem.name,
        spec.target,
        warm_start=past,
        knowledge=knowledge_base() if llm is not None else None,
        run_id=run.id,
        problem_source=session.problem.source,
    )
    config = SearchConfig(
        budget=limits.budget,
        time_s=limits.time_s,
        stall=limits.stall,
        target_speedup=limits.target_speedup,
        max_cost=limits.max_cost,
        draft_steps=draft_steps,
        options=search_options(spec, profile),
        confirm_best=confirm_best,
        max_inflight=max_inflight,
    )
    if llm is not None:  # the prompt states the rule and policy the run's evaluations apply
        getattr(llm, "inner", llm).options = config.options
    return Driver(
        store,
        run,
        session.problem,
        strategy,
        evaluators,
        config,
        rng,
        tune=TuneOperator(),
        llm=llm,
        memory=memory,
        roots=roots,
        on_update=on_update,
    )


@dataclass
class RunOutcome:
    """What a finished session reports (`optimize --json`), and the best kernel's evaluation with torch.compile."""

    run: str
    evaluations: int
    stop_reason: str
    seed_fitness: float | None
    best_fitness: float | None
    best_speedup: float | None
    best_node: int | None
    best_kernel: str | None
    best_speedup_compile: float | None
    llm_calls: int
    llm_cost: float
    waiting: int = 0  # calls a deferred model (inbox, batch) has not answered: run the command again for them
    status: str = "done"
    final: EvalResult | None = None

    def to_json(self) -> dict[str, Any]:
        return {k: v for k, v in asdict(self).items() if k != "final"}


def final_with_compile(session: Session, evaluator: Evaluate) -> EvalResult | None:
    """The best kernel evaluated once with the torch.compile baseline the search ran without, written beside the
    run's nodes as best_with_compile.json; None where the search had it already, the user turned it off, or the
    target never times it."""
    spec, store = session.spec, session.store
    if compile_in_search(spec.baseline, spec.compile_baseline) is not False or not spec.compile_baseline:
        return None
    if not evaluator.platform.compile_baseline:
        return None
    best = Graph.from_store(store.nodes(session.run.id)).best()
    if best is None:
        return None
    kernel_rel = store.node(best.id).kernel_path
    store.read(kernel_rel)  # written here from the store where another machine's process stored it
    kernel = store.path(kernel_rel)
    options = EvalOptions(
        trials=spec.trials, baseline=spec.baseline, correctness=spec.correctness, allow_tf32=spec.allow_tf32
    )
    final = evaluator.evaluate(session.problem, kernel, options)
    store.put(f"{session.run.id}/best_with_compile.json", final.model_dump_json(indent=1, exclude={"log_tail"}))
    return final


def finish(session: Session, stop_reason: str, evaluator: Evaluate | None = None) -> RunOutcome:
    """Lessons distilled for later runs, the best kernel against torch.compile (with an evaluator), the outcome."""
    store, run = session.store, session.run
    waiting = len(store.pending_calls(run.id))
    lessons.distill(store, run.id)
    # A waiting run is not finished: its best is measured against torch.compile when it is.
    final = final_with_compile(session, evaluator) if evaluator is not None and not waiting else None
    nodes = store.nodes(run.id)
    graph = Graph.from_store(nodes)
    best = graph.best()
    seed = graph.nodes[graph.order[0]] if graph.order else None
    best_row = next((n for n in nodes if best and n.id == best.id), None)
    usage = store.llm_usage(run.id).values()
    run_lock.release(store.runs_dir / run.id)  # another process may search it from here on
    return RunOutcome(
        run=run.id,
        evaluations=len(graph),
        stop_reason=stop_reason,
        seed_fitness=seed.fitness if seed else None,
        best_fitness=best.fitness if best else None,
        best_speedup=best.speedup if best else None,
        best_node=best_row.step if best_row else None,
        best_kernel=str(store.path(best_row.kernel_path).resolve()) if best_row else None,
        best_speedup_compile=final.speedup_over("compile") if final is not None else None,
        llm_calls=sum(int(u["calls"]) for u in usage),
        llm_cost=sum(u["cost"] for u in usage),
        waiting=waiting,
        status=(store.get_run(run.id) or run).status,
        final=final,
    )
