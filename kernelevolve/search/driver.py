"""The asynchronous search driver: select -> propose -> dedup -> evaluate -> store -> observe, until a stop rule.

The strategy selects in the event loop; each step (an LLM call in a thread, or the tune operator, then
the evaluation in a thread) runs as a task, several in flight, one evaluator per device, so generation
never holds a device. Every finished step is committed before the strategy sees it; a crash loses only
what was in flight. Each step claims a node of the run's budget in the store before it starts, and the nodes
other processes on the run store are merged in as they come (store/agents.py). The operators and evaluators
are ports (search/ports.py): the driver knows neither the model nor the harness.
"""

from __future__ import annotations

import asyncio
import itertools
import random
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from kernelevolve.agents.context import MemoryAgent, analyse_step
from kernelevolve.eval import environment
from kernelevolve.eval.wire import EvalOptions
from kernelevolve.operators.base import Proposal, Request
from kernelevolve.operators.tune import has_tunables, params_of
from kernelevolve.problem.candidate import detect_languages
from kernelevolve.problem.problem import Problem, source_hash
from kernelevolve.result import MACHINE_STATUSES, RETRIED_STATUSES, EvalResult, Status
from kernelevolve.search.graph import Graph, GraphNode
from kernelevolve.search.ports import Defer, Evaluate, Propose, Steer
from kernelevolve.search.strategies import Selection, Strategy
from kernelevolve.store.agents import Agent
from kernelevolve.store.models import Run
from kernelevolve.store.store import NodeRecord, Store, StoreError


async def in_daemon_thread(fn: Callable, *args: object) -> object:
    """fn(*args) in a daemon thread. asyncio's own threads are joined when the loop closes, so an interrupted run
    would wait for a call that never returns (a model server that hangs); a daemon thread is left behind."""
    loop = asyncio.get_running_loop()
    future = loop.create_future()

    def settle(result: object, error: BaseException | None) -> None:
        if future.done():  # cancelled: the run was interrupted
            return
        if error is not None:
            future.set_exception(error)
        else:
            future.set_result(result)

    def target() -> None:
        try:
            result, error = fn(*args), None
        except BaseException as e:  # noqa: BLE001 - handed to the awaiting task
            result, error = None, e
        try:
            loop.call_soon_threadsafe(settle, result, error)
        except RuntimeError:  # the loop is closed: the run was interrupted and nobody waits any more
            pass

    threading.Thread(target=target, daemon=True).start()
    return await future


# A harness_limit (the machine was short, not the kernel) or an inconclusive result (the host was contended while a
# timing check failed) is evaluated again later in the run, at most this often (result.RETRIED_STATUSES).
MACHINE_RETRIES = 2
RETRIED_AS = {Status.HARNESS_LIMIT: "a harness_limit", Status.INCONCLUSIVE: "an inconclusive result"}
MAX_PREBUILDS = 4  # extension builds at once before their evaluations (GPU targets; eval/evaluator.py's prebuild)
# Failures a debug step may be given, least promising first (a wrong value ran, a compile error did not), and how
# many failures in a row a lineage may hold before it is given up.
DEBUGGABLE = ("compile_error", "rejected", "runtime_error", "incorrect")
DEBUG_DEPTH = 2


@dataclass(frozen=True)
class SearchConfig:
    budget: int = 20  # nodes in the run, seed included
    time_s: float | None = None  # search wall time over all sessions of the run
    stall: int | None = None  # stop after this many nodes without a better best
    target_speedup: float | None = None
    max_cost: float | None = None  # USD of LLM calls over the run
    max_inflight: int | None = None  # default: devices + 1
    draft_steps: int = 3  # LLM steps that write independent kernels from the problem alone
    tune_p: float = 0.25  # with an LLM: share of steps given to the tune operator when the parent has tunables
    options: EvalOptions = field(default_factory=EvalOptions)  # how each node is evaluated
    # A node about to become the best is evaluated again (fresh inputs, fresh timing) and keeps the lower of the
    # two: one lucky measurement on a noisy host never decides the search's winner.
    confirm_best: bool = True


def one_line(text: str, width: int = 200) -> str:
    """Text from a compiler, a kernel or a model on one line of at most `width` characters."""
    flat = " ".join(text.split())
    return flat if len(flat) <= width else flat[: width - 4] + " ..."


def confirmed(first: EvalResult, again: EvalResult) -> EvalResult:
    """Of two evaluations of one kernel, the one that says less for it: a failure, else the lower fitness, with
    both speedups in its review."""
    if not again.correct:
        again.review.append(f"evaluated again before it became the best: first {first.fitness:.3g}x, then failed")
        return again
    low, high = (first, again) if (first.fitness or 0.0) <= (again.fitness or 0.0) else (again, first)
    low.review.append(
        f"evaluated again before it became the best: {first.fitness:.3g}x, then {again.fitness:.3g}x "
        f"(the lower is kept; they differ by {abs(high.fitness - low.fitness) / max(low.fitness, 1e-12):.0%})"
    )
    return low


@dataclass(frozen=True)
class Root:
    """A node with no parent, evaluated before the search unless its source is already in the run: the seed, a
    starting kernel, an earlier run's best (warm start)."""

    operator: str  # "seed" | "start" | "warm-start"
    source: str
    message: str  # what the progress line says while it is evaluated


@dataclass
class StepOutcome:
    operator: Propose | None  # None: a root
    proposal: Proposal
    result: EvalResult | None = None  # None: no node (no candidate, or a known one)
    wall_s: float = 0.0
    reused_from: int | None = None


@dataclass
class Progress:
    """What the display shows; the driver updates it and calls `on_update`."""

    nodes: int = 0
    budget: int = 0
    inflight: int = 0
    statuses: Counter = field(default_factory=Counter)
    best_fitness: float | None = None
    best_node: int | None = None
    elapsed_s: float = 0.0
    time_s: float | None = None
    cost: float = 0.0
    message: str = ""


class Driver:
    retry_wait_s = 20.0  # before a harness_limit's or an inconclusive's n-th evaluation again: n times this
    heartbeat_s = 10.0  # with nothing finished for this long, the progress line says what the run is waiting for
    claim_wait_s = 2.0  # with other processes' steps holding the budget left, ask again after this long

    def __init__(
        self,
        store: Store,
        run: Run,
        problem: Problem,
        strategy: Strategy,
        evaluators: list[Evaluate],
        config: SearchConfig,
        rng: random.Random,
        *,
        tune: Propose | None = None,
        llm: Propose | None = None,
        memory: MemoryAgent | None = None,
        roots: list[Root] | None = None,
        on_update: Callable[[Progress], None] | None = None,
    ):
        """tune: the operator for parameter steps (all steps without `llm`); llm: the model's operator (drafts,
        refinements); memory: builds an LLM step's parent and prompt context (default: no deep search)."""
        self.store = store
        self.run = run
        self.problem = problem
        self.strategy = strategy
        self.evaluators = evaluators
        self.config = config
        self.rng = rng
        self.tune = tune
        self.llm = llm
        self.operators = [op for op in (llm, tune) if op is not None]
        if not self.operators:
            raise ValueError("a search needs an operator: the tune operator, an LLM operator, or both")
        self.memory = memory or MemoryAgent(
            store, problem.name, run.platform, run_id=run.id, problem_source=problem.source
        )
        self.roots = list(roots or [])
        self.on_update = on_update or (lambda p: None)
        rows = store.nodes(run.id)
        self.graph = Graph.from_store(rows)
        self.agent = Agent(store, run.id)  # this process's lease on the run and claims on its budget
        self._seen = max((r.id for r in rows), default=0)  # the last stored node merged into the graph
        self.steps = {r.id: r.step for r in rows}  # node id -> its number within the run, which users see
        self.sources: dict[int, str] = {}
        self.inflight_hashes: set[str] = set()
        self.inflight_drafts = 0
        self._tune_idle = False  # the tune operator found nothing new; a new node may give it something
        self._tune_spent: set[int] = set()  # nodes whose every setting the tune operator has tried
        self._tune_stop = ""  # what it said the last time it found nothing
        self._has_tunables: dict[int, bool] = {}
        self.inflight_parents: Counter = Counter()  # parents of the LLM steps in flight: never debugged twice at once
        self._unusable_cache: dict[int, bool] = {}
        calls = store.llm_calls(run.id)
        self.llm_seq = max((c["seq"] for c in calls), default=0)
        self._cost_before = sum(c["cost"] for c in calls)  # earlier sessions of the run
        self.progress = Progress(budget=config.budget, time_s=config.time_s)
        self._tasks: set[asyncio.Task] = set()
        self._waiting: dict[int, tuple[str, float]] = {}  # what each step in flight waits for, since when
        self._builds = asyncio.Semaphore(MAX_PREBUILDS)  # extension builds before their evaluations take a device
        self._environment: dict[str, str] | None = None  # what a reused result must have been judged under
        self._ids = itertools.count()
        self._started = time.monotonic()
        self._elapsed_before = run.elapsed_s or 0.0
        self._pending = store.runs_dir / run.id / "pending"  # candidates on their way to an evaluator
        if not store.single_writer:  # processes sharing the run may evaluate one kernel at once: one folder each
            self._pending /= self.agent.id.replace(":", "-")
        # LLM calls a deferred model (inbox, batch) has not answered: seq -> the stored call. They hold in-flight
        # slots and count toward the budget; a later session serves their answers before anything else.
        self.waiting_calls: dict[int, dict] = {c["seq"]: c for c in store.pending_calls(run.id)} if llm else {}
        self.waiting_where = ""

    # ---- bookkeeping ----

    def _elapsed(self) -> float:
        """The search's time, less what its evaluations waited for a device of a shared pool (eval/service)."""
        queued = getattr(self.evaluators[0], "queued_s", None) if self.evaluators else None
        return self._elapsed_before + time.monotonic() - self._started - (queued() if queued else 0.0)

    @property
    def cost(self) -> float:
        return self._cost_before + sum(op.cost for op in self.operators)

    def _source(self, node_id: int) -> str:
        if node_id not in self.sources:
            self.sources[node_id] = self.store.source(node_id)
        return self.sources[node_id]

    def _stalled(self) -> bool:
        best = self.graph.best()
        if not self.config.stall or best is None:
            return False
        return len(self.graph.order) - self.graph.order.index(best.id) - 1 >= self.config.stall

    def _should_stop(self) -> str:
        best = self.graph.best()
        if len(self.graph) + len(self._tasks) + len(self.waiting_calls) >= self.config.budget:
            return f"budget of {self.config.budget} nodes reached"
        if self.config.time_s is not None and self._elapsed() >= self.config.time_s:
            return f"time limit of {self.config.time_s:g} s reached"
        if self._stalled():
            return f"no improvement in {self.config.stall} nodes"
        if self.config.target_speedup and best and (best.speedup or 0) >= self.config.target_speedup:
            return f"target speedup {self.config.target_speedup:g}x reached"
        if self.config.max_cost is not None and self.cost >= self.config.max_cost:
            return f"LLM cost budget of ${self.config.max_cost:g} reached (${self.cost:.4f} spent)"
        return next((r for r in (op.stop_reason() for op in self.operators) if r), "")

    def _refresh(self, message: str = "") -> None:
        p = self.progress
        p.nodes, p.inflight, p.elapsed_s, p.cost = len(self.graph), len(self._tasks), self._elapsed(), self.cost
        p.statuses = Counter(n.status for n in self.graph.nodes.values())
        best = self.graph.best()
        p.best_fitness, p.best_node = (best.fitness, self.steps[best.id]) if best else (None, None)
        if message:
            p.message = message
        self.on_update(p)

    def _waiting_for(self) -> str:
        """'waiting for the model (2 calls, the longest for 45 s) and an evaluation (12 s)'."""
        now, parts = time.monotonic(), []
        for what in ("the model", "an evaluation"):
            since = sorted((now - t for w, t in self._waiting.values() if w == what), reverse=True)
            if len(since) == 1:
                parts.append(f"{what} ({since[0]:.0f} s)")
            elif since:
                noun = "calls" if what == "the model" else "evaluations"
                parts.append(f"{what} ({len(since)} {noun}, the longest for {since[0]:.0f} s)")
        return "waiting for " + " and ".join(parts) if parts else "waiting"

    def _known(self) -> set[str]:
        return {n.source_hash for n in self.graph.nodes.values()} | self.inflight_hashes

    def _drafts(self) -> int:
        """Drafts made: stored, in flight, and waiting for a deferred model's answer."""
        waiting = sum(1 for c in self.waiting_calls.values() if not c["parents"])
        return sum(1 for n in self.graph.nodes.values() if n.operator == "llm-draft") + self.inflight_drafts + waiting

    # ---- choosing the next step ----

    def _next_step(self, llm: bool = True) -> tuple[Propose, Request] | None:
        """The operator for the next step and what it is asked; None when nothing can be proposed. llm False: the
        model's slots are taken (calls waiting for a deferred model), so only a parameter step may run."""
        model = self.llm if llm else None
        if isinstance(self.llm, Steer):
            if model is None:
                return None
            parents = self.llm.next_parents({n.source_hash: i for i, n in self.graph.nodes.items()})
            return None if parents is None else (self.llm, self._request(self.llm, Selection(parents)))
        if model is not None:
            debug = self._debug_target()
            no_best = self.graph.best() is None
            drafting = self._drafts() < self.config.draft_steps
            if debug is not None and (not no_best or not drafting or self.rng.random() < 0.5):
                return model, self._request(model, Selection([debug], self.graph.nodes[debug].island))
            if drafting or no_best:
                return model, self._request(model, None)
        selection = self.strategy.select(self.graph)
        if selection is None:
            return None
        if model is None:  # parameter steps only: on another parent where the strategy's has nothing to tune
            selection = self._tune_parent(selection) if self.tune is not None else None
            return None if selection is None else (self.tune, self._request(self.tune, selection))
        tunable = self.tune is not None and not self._tune_idle and self._tunable(selection.parents[0])
        op = self.tune if tunable and self.rng.random() < self.config.tune_p else model
        return op, self._request(op, selection)

    def _tunable(self, node_id: int) -> bool:
        """Whether a parameter step on this node may find something: it has TUNABLES (or launch parameters to
        infer), and the tune operator has not tried every setting of them."""
        if node_id not in self._has_tunables:
            self._has_tunables[node_id] = has_tunables(self._source(node_id))
        return self._has_tunables[node_id] and node_id not in self._tune_spent

    def _tune_parent(self, selection: Selection) -> Selection | None:
        """The strategy's selection, or where its first parent has nothing left to tune, the best correct node
        that has; None when no node has."""
        if self._tunable(selection.parents[0]):
            return selection
        tunable = [n for n in self.graph.correct() if self._tunable(n.id)]
        if not tunable:
            return None
        best = max(tunable, key=lambda n: n.score)
        return Selection([best.id], best.island)

    def _nothing_to_propose(self) -> str:
        """Why no step can be proposed, and, where no kernel had anything to tune, what to do about it."""
        if self._tune_stop:
            return self._tune_stop
        if self.llm is None and self.tune is not None:
            return (
                "nothing to tune: no correct kernel of the run has TUNABLES (module-level integer constants, "
                'e.g. TUNABLES = {"BLOCK": [64, 128, 256]} for BLOCK = 128, that the tune operator sets); add them '
                "to the seed, or give a model (--llm)"
            )
        return "search space exhausted: nothing new to propose"

    def _debug_target(self) -> int | None:
        """The most promising failure no step has built on yet: with a correct node, a failing child of a parent
        within half the best fitness; without one, any failure. Its error reaches the model in a debug step
        (greedy and MCTS expand correct nodes only, so a failure would otherwise never be seen again). A chain of
        DEBUG_DEPTH failures is given up."""
        best = self.graph.best()
        chosen, rank = None, (-1, -1)
        for node_id in self.graph.order:
            node = self.graph.nodes[node_id]
            if node.status not in DEBUGGABLE or node.children or node_id in self._parents_in_flight():
                continue
            if not node.operator.startswith("llm") or self._failures_above(node_id) >= DEBUG_DEPTH:
                continue
            parent = self.graph.nodes.get(node.parents[0]) if node.parents else None
            if best is not None and not (parent and parent.correct and parent.score >= 0.5 * best.score):
                continue
            if self._unusable(node_id):
                continue
            r = (DEBUGGABLE.index(node.status), node_id)
            if r > rank:
                chosen, rank = node_id, r
        return chosen

    def _parents_in_flight(self) -> set[int]:
        """Parents of the LLM steps running now and of the calls waiting for a deferred model's answer."""
        waiting = {p for c in self.waiting_calls.values() for p in c["parents"]}
        return set(self.inflight_parents) | waiting

    def _serve_waiting(self, free: asyncio.Queue) -> str:
        """Calls of an earlier session that now have answers become steps, before anything new is asked: each as
        it was recorded (its prompt, its parents), whatever order the answers came in. Returns why the run cannot
        go on ("" when it can): a waiting call whose model this session does not name."""
        if not isinstance(self.llm, Defer):
            return ""
        resume = self.llm.resume
        for seq, call in sorted(self.waiting_calls.items()):
            if "prompt" not in call:  # made in this session: its answer is collected next session
                continue
            parents = list(call["parents"])
            proposal = resume(call, self._source(parents[0]) if parents else None)
            if proposal is None:
                continue
            if proposal.stop:
                return proposal.stop
            del self.waiting_calls[seq]
            if parents and parents[0] in self.graph.nodes:
                proposal.island = self.graph.nodes[parents[0]].island
            self._refresh(f"call {seq}: its answer came; evaluating it")
            task = asyncio.create_task(self._after_proposal(self.llm, proposal, free))
            task.claimed = False  # type: ignore[attr-defined]  # its pending row holds its node of the budget
            task.draft = not parents  # type: ignore[attr-defined]
            self.inflight_drafts += task.draft  # a served draft counts as one in flight, as a new one does
            task.parents = parents  # type: ignore[attr-defined]
            self.inflight_parents.update(parents)
            self._tasks.add(task)
        return ""

    def _waiting_reason(self) -> str:
        n = len(self.waiting_calls)
        where = self.waiting_where
        if not where and isinstance(self.llm, Defer):
            where = self.llm.where(max(self.waiting_calls))
        return f"waiting for the model's answer to {n} call{'s' if n != 1 else ''} ({where})"

    def _failures_above(self, node_id: int) -> int:
        """How many failures in a row end at this node (itself included)."""
        n = 0
        for a in self.graph.ancestors(node_id):
            if self.graph.nodes[a].correct:
                break
            n += 1
        return n

    def _unusable(self, node_id: int) -> bool:
        """An answer with no kernel to fix (no code block, edits that did not apply)."""
        if node_id not in self._unusable_cache:
            result = self.store.evaluation(node_id)
            self._unusable_cache[node_id] = bool(result and result.reason.startswith("unusable response"))
        return self._unusable_cache[node_id]

    def _request(self, op: Propose, selection: Selection | None) -> Request:
        parents = selection.parents if selection else []
        island = selection.island if selection else 0
        request = Request(
            parents, island, [self._source(p) for p in parents], known=frozenset(self._known()), rng=self.rng
        )
        if op is self.llm:
            request.parent = self.memory.parent(self.graph.ancestors(parents[0])) if parents else None
            request.context = self.memory.prompt(request.parent)
            request.draft_index = self._drafts() + 1
            self.llm_seq = self.agent.next_llm_seq()  # unique over the processes searching the run
            request.seq = self.llm_seq
        else:  # an operator that found nothing new may ask again, on what the strategy picks now
            request.reselect = lambda: self._reselect(op)
        return request

    def _reselect(self, op: Propose) -> Request | None:
        selection = self.strategy.select(self.graph)
        selection = self._tune_parent(selection) if selection else None
        return self._request(op, selection) if selection else None

    # ---- steps ----

    async def _step(self, op: Propose, request: Request, free: asyncio.Queue) -> StepOutcome:
        key = next(self._ids)
        self._waiting[key] = ("the model", time.monotonic())
        try:
            proposal = await in_daemon_thread(op.propose, request)
        finally:
            del self._waiting[key]
        proposal.knowledge = list(request.context.knowledge_paths)  # stored with the node: retrieval is measurable
        if proposal.call is not None:  # a pending call keeps them until its answer becomes a node
            proposal.call.knowledge = proposal.knowledge
        return await self._after_proposal(op, proposal, free)

    async def _after_proposal(self, op: Propose, proposal: Proposal, free: asyncio.Queue) -> StepOutcome:
        if proposal.source is None:  # no candidate (or a pending call): the note says why
            return StepOutcome(op, proposal)
        if proposal.source_hash in self._known():
            proposal.note = "duplicate: the model returned a known kernel"
            return StepOutcome(op, proposal)
        self.inflight_hashes.add(proposal.source_hash)  # a twin arriving before this one is stored: a duplicate
        if proposal.result is not None:  # judged already (an unusable answer): stored, not evaluated
            return StepOutcome(op, proposal, proposal.result)
        return await self._evaluate(op, proposal, free)

    async def _evaluate(self, op: Propose | None, proposal: Proposal, free: asyncio.Queue) -> StepOutcome:
        reused = self.store.find_evaluated(self.problem.hash, self.run.platform, proposal.source_hash, self._same_env)
        if reused is not None:  # evaluated before, in this or another run: never twice
            node, result = reused
            return StepOutcome(op, proposal, result, 0.0, node.id)
        self._pending.mkdir(parents=True, exist_ok=True)
        path = self._pending / f"{proposal.source_hash}.py"
        path.write_text(proposal.source)
        t0 = time.monotonic()
        await self._prebuild(proposal)  # GPU targets: a device is taken only once the extensions are built
        try:
            result = await self._evaluate_once(path, free)
            for attempt in range(1, MACHINE_RETRIES + 1):
                if result.status not in RETRIED_STATUSES:
                    break
                # No verdict on the kernel: the machine was short or busy. The evaluator goes to other work meanwhile.
                wait, first = self.retry_wait_s * attempt, result
                self._refresh(f"{proposal.operator} candidate: {first.status.value}; evaluated again in {wait:g} s")
                await asyncio.sleep(wait)
                result = await self._evaluate_once(path, free)
                why = one_line(first.reason, 300)
                result.review.append(
                    f"evaluated again ({attempt} of {MACHINE_RETRIES}) after {RETRIED_AS[first.status]}: {why}"
                )
            return StepOutcome(op, proposal, result, time.monotonic() - t0)
        finally:
            path.unlink(missing_ok=True)

    async def _evaluate_once(self, path: Path, free: asyncio.Queue) -> EvalResult:
        """One evaluation on the next free evaluator; a node about to become the best is evaluated twice."""
        evaluator = await free.get()
        key = next(self._ids)
        self._waiting[key] = ("an evaluation", time.monotonic())
        try:
            result = await in_daemon_thread(evaluator.evaluate, self.problem, path, self.config.options)
            if self._would_be_best(result):
                again = await in_daemon_thread(evaluator.evaluate, self.problem, path, self.config.options)
                result = confirmed(result, again)
            return result
        finally:
            del self._waiting[key]
            free.put_nowait(evaluator)

    def _same_env(self, result: EvalResult) -> bool:
        """A stored result is reused only where this harness, torch, Triton and device judged it."""
        if self._environment is None:
            self._environment = environment.of(self.evaluators[0].platform)
        return environment.matches(result.versions, result.device, self._environment)

    async def _prebuild(self, proposal: Proposal) -> None:
        """A candidate that builds a C++/CUDA extension has it built before its evaluation takes a device (at most
        MAX_PREBUILDS builds at once, on the pool's builder: CPU workers on a cluster), so no device waits on nvcc
        while other evaluations are queued; its evaluation then loads the build. GPU targets only: on the cpu target
        a build would take the cores being timed. A failed build only means the evaluation builds it and says why."""
        evaluator = self.evaluators[0]
        builds = {"cpp", "cuda"} & set(detect_languages(proposal.source or ""))
        if not evaluator.platform.separate_device() or not builds:
            return
        copy = self._pending / f"{proposal.source_hash}.prebuild.py"
        copy.write_text(proposal.source or "")
        self._waiting[key := next(self._ids)] = ("its extensions' build", time.monotonic())
        try:
            async with self._builds:
                await in_daemon_thread(evaluator.prebuild, self.problem, copy)
        except Exception:  # noqa: BLE001 - the evaluation builds it itself, and its result says what failed
            pass
        finally:
            del self._waiting[key]
            copy.unlink(missing_ok=True)

    def _would_be_best(self, result: EvalResult) -> bool:
        best = self.graph.best()
        return (
            self.config.confirm_best
            and result.correct
            and result.fitness is not None
            and best is not None
            and result.fitness > (best.fitness or 0.0)
        )

    def _sync(self) -> None:
        """The nodes other processes on the run stored since the last look, merged into the graph; the strategy
        observes them (their MCTS statistics were stored by the process that made them). SQLite has no others."""
        if self.store.single_writer:
            return
        rows = self.store.nodes_after(self.run.id, self._seen)
        self._seen = max([self._seen, *(r.id for r in rows)])
        for node in self.graph.merge(rows):
            self.steps[node.id] = next(r.step for r in rows if r.id == node.id)
            self.strategy.observe(self.graph, node)

    def _settle(self, outcome: StepOutcome, claimed: bool) -> None:
        """A step that stores no node: its LLM call recorded, and its claim on the budget given back with it."""
        proposal, claimed_by = outcome.proposal, self.agent.id if claimed else None
        if proposal.call is not None:
            self.store.add_llm_call(self.run.id, proposal.call, claimed_by)
        elif claimed:
            self.agent.release()
        if proposal.pending and proposal.call is not None:
            self.waiting_calls[proposal.call.seq] = {"seq": proposal.call.seq, "parents": proposal.parents}
            self.waiting_where = proposal.pending

    def _stored_elsewhere(self, outcome: StepOutcome) -> bool:
        """Whether another process on the run stored this kernel while this one evaluated it."""
        self._sync()
        if outcome.proposal.source_hash not in {n.source_hash for n in self.graph.nodes.values()}:
            return False
        outcome.proposal.note = "duplicate: another process on the run stored this kernel first"
        if outcome.proposal.call is not None:
            outcome.proposal.call.outcome = "duplicate"
        return True

    def _commit(self, outcome: StepOutcome, claimed: bool = True) -> GraphNode | None:
        """The operator hears the outcome, then node, evaluation and LLM call are stored in one transaction, which
        gives back the step's claim on the budget (claimed: the step holds one; a call served from an earlier
        session is counted by its pending row instead)."""
        proposal, result = outcome.proposal, outcome.result
        if outcome.operator is not None:
            outcome.operator.feedback(proposal, result)
        if result is None or self._stored_elsewhere(outcome):
            self._settle(outcome, claimed)
            return None
        node = GraphNode(
            id=-1,
            parents=proposal.parents,
            operator=proposal.operator,
            source_hash=proposal.source_hash,
            params=proposal.params,
            status=result.status.value,
            correct=result.correct,
            fitness=result.fitness,
            speedup=result.speedup,
            island=proposal.island,
        )
        updates = self.strategy.observe(self.graph, node)
        record = NodeRecord(
            operator=proposal.operator,
            source=proposal.source,
            source_hash=proposal.source_hash,
            params=proposal.params,
            parents=proposal.parents,
            result=result,
            wall_s=outcome.wall_s,
            island=proposal.island,
            reused_from=outcome.reused_from,
            llm_call=proposal.call,
            analysis=analyse_step(result, proposal.strategy)
            | ({"knowledge": proposal.knowledge} if proposal.knowledge else {}),
        )
        claimed_by = self.agent.id if claimed else None
        row = self.store.add_node(
            self.run.id,
            record,
            strategy_state=self.strategy.state,
            visit_updates=updates,
            elapsed_s=self._elapsed(),
            claimed_by=claimed_by,
        )
        if row is None:  # stored by another process between the look above and the commit: its claim is given back
            proposal.note = "duplicate: another process on the run stored this kernel first"
            if proposal.call is not None:
                proposal.call.outcome = "duplicate"
                self.store.add_llm_call(self.run.id, proposal.call)
            self._sync()
            return None
        node.id = row.id
        self._tune_idle = False
        self.steps[node.id] = row.step
        self.graph.add(node)
        self.sources[node.id] = proposal.source
        return node

    def _commit_and_report(self, outcome: StepOutcome, claimed: bool = True) -> GraphNode | None:
        """Commit, and say what the node scored; its first review note too (a busy host, a very large speedup),
        since a search would otherwise rank such results silently."""
        node = self._commit(outcome, claimed)
        if node is None:
            if outcome.proposal.pending:
                self._refresh(f"{outcome.proposal.operator} call waits for its answer: {outcome.proposal.pending}")
                return None
            note = outcome.proposal.note or outcome.proposal.stop
            self._refresh(f"{outcome.proposal.operator} step produced no candidate: {note[:120]}")
            return None
        self._refresh(self._node_line(node, outcome.result))
        return node

    def _node_line(self, node: GraphNode, result: EvalResult | None, again: bool = False) -> str:
        """'node 3 (tune): ok 1.234', with the first review note of a correct node, the reason of a failed one,
        each on one line (`show RUN --node N` has them in full)."""
        line = f"node {self.steps[node.id]} ({node.operator}): {node.status}" + (" (evaluated again)" if again else "")
        if result is not None and not result.correct:
            return line + (f": {one_line(result.reason)}" if result.reason else "")
        review = result.review if result is not None else []
        fitness = f" {node.fitness:.3f}" if node.fitness else ""
        if result is not None and result.unreliable:  # a contended host: the figure first of all
            return line + fitness + f" (unreliable: {one_line(result.unreliable)})"
        return line + fitness + (f" (review: {one_line(review[0])})" if review else "")

    async def _evaluate_roots(self, free: asyncio.Queue) -> None:
        """Each root not yet in the run; one stored with a MACHINE_STATUSES outcome is evaluated again (a resume
        under a larger --timeout, say): those say more about the limits and the machine than about the kernel."""
        stored = {n.source_hash: n for n in self.graph.nodes.values()}
        for root in self.roots:
            h = source_hash(root.source)
            proposal = Proposal(root.operator, [], root.source, h, params_of(root.source))
            again = stored.get(h)
            if again is not None and again.status in {s.value for s in MACHINE_STATUSES}:
                self._refresh(f"{root.message} again (it was stored as {again.status})")
                outcome = await self._evaluate(None, proposal, free)
                self.store.replace_result(again.id, outcome.result, outcome.wall_s)
                again.status, again.correct = outcome.result.status.value, outcome.result.correct
                again.fitness, again.speedup = outcome.result.fitness, outcome.result.speedup
                self._refresh(self._node_line(again, outcome.result, again=True))
            elif h not in self._known():
                self._refresh(root.message)
                claimed = self.agent.claim(self.config.budget) == "granted"  # a root is evaluated all the same
                self._commit_and_report(await self._evaluate(None, proposal, free), claimed)

    async def _search(self) -> str:
        free: asyncio.Queue = asyncio.Queue()
        for ev in self.evaluators:
            free.put_nowait(ev)
        await self._evaluate_roots(free)
        if self.llm is None and self.graph.best() is None:
            if not self.graph.order:
                return "nothing to search from: no seed kernel and no LLM"
            seed = self.graph.nodes[self.graph.order[0]]
            more = " (nor is any starting kernel)" if any(r.operator == "start" for r in self.roots) else ""
            if seed.status == "timeout":  # the deadline, not the kernel, may be what is wrong
                more = " and no starting kernel is correct" if more else ""
                return f"the seed kernel timed out (past the evaluation deadline){more}; raise --timeout or fix it"
            return f"the seed kernel is not correct ({seed.status}){more}; fix it before searching"
        reason = self._serve_waiting(free)
        serial = isinstance(self.llm, Steer)
        max_inflight = 1 if serial else self.config.max_inflight or len(self.evaluators) + 1
        while True:
            while not reason and len(self._tasks) < max_inflight:
                self._sync()
                reason = self._should_stop()
                if reason:
                    break
                claim = self.agent.claim(self.config.budget)
                if claim == "spent":  # other processes' nodes filled it
                    reason = f"budget of {self.config.budget} nodes reached"
                    break
                if claim == "wait":  # other processes' steps hold what is left: it is free again if they fail
                    if self._tasks:
                        break
                    self._refresh("waiting for other processes' steps on the run: they hold the budget left")
                    await asyncio.sleep(self.claim_wait_s)
                    continue
                step = self._next_step(llm=len(self._tasks) + len(self.waiting_calls) < max_inflight)
                if step is None:
                    self.agent.release()
                    if self.waiting_calls:  # nothing to do but wait for the deferred model's answers
                        if self._tasks:
                            break
                        reason = self._waiting_reason()
                        break
                    reason = self._nothing_to_propose()
                    break
                task = self._start(*step, free)
                if task is None:
                    self.agent.release()
                    continue
                self._tasks.add(task)
                self._refresh()
            if not self._tasks:
                return self._waiting_reason() if self.waiting_calls else reason
            done, self._tasks = await asyncio.wait(
                self._tasks, timeout=self.heartbeat_s, return_when=asyncio.FIRST_COMPLETED
            )
            if not done:
                self.agent.touch()
                self._refresh(self._waiting_for())
            for task in done:
                self.inflight_drafts -= getattr(task, "draft", False)
                self.inflight_parents.subtract(getattr(task, "parents", []))
                self.inflight_parents += Counter()  # drops the parents no step builds on any more
                outcome = task.result()
                if outcome.result is not None:  # a duplicate's hash belongs to the step still evaluating it
                    self.inflight_hashes.discard(outcome.proposal.source_hash)
                self._commit_and_report(outcome, getattr(task, "claimed", True))

    def _leave(self) -> int:
        """The run's lease given up; how many other processes search it still (none where the store failed)."""
        try:
            return self.agent.leave()
        except StoreError:
            return 0

    def _start(self, op: Propose, request: Request, free: asyncio.Queue) -> asyncio.Task | None:
        """The step's task: the model's call then the evaluation, or a parameter step proposed here, at once (the
        next one then knows it); None where the tune operator found nothing new on that parent."""
        if op is self.llm:
            draft = not request.parents
            self.inflight_drafts += draft
            self.inflight_parents.update(request.parents)
            task = asyncio.create_task(self._step(op, request, free))
            task.draft = draft  # type: ignore[attr-defined]
            task.parents = request.parents  # type: ignore[attr-defined]
            return task
        proposal = op.propose(request)
        if proposal.source is None:  # that parent's settings are all tried: another, or the model
            self._tune_spent.update(proposal.parents[:1])
            self._tune_stop = proposal.stop or proposal.note
            self._tune_idle = self.llm is not None  # no parameter step until a new node
            return None
        self.inflight_hashes.add(proposal.source_hash)
        return asyncio.create_task(self._evaluate(op, proposal, free))

    def run_search(self) -> str:
        """Run until a stop rule; returns why it stopped. The run's status is updated in the store; while other
        processes search it, it stays `running`."""
        self.store.update_run(self.run.id, status="running", budget=self.config.budget)
        self.agent.join()
        try:
            reason = asyncio.run(self._search())
        except BaseException:
            if not self._leave():
                self.store.update_run(self.run.id, status="interrupted", elapsed_s=self._elapsed())
            raise
        status = "done" if self.graph.nodes else "failed"  # stopped before any node: nothing was searched
        if self.waiting_calls:
            status = "waiting"
        if self._leave():
            status = "running"
        self.store.update_run(self.run.id, status=status, stop_reason=reason, elapsed_s=self._elapsed())
        self._refresh(reason)
        return reason
