"""The asynchronous search driver: select -> propose -> evaluate -> store -> observe, until a stop rule.

Proposals are generated in the event loop; evaluations run in threads, one evaluator (one worker process
at a time) per device, so generation never holds a device. Several proposals stay in flight. Every
finished evaluation is committed before the strategy sees it; a crash loses only what was in flight.
"""

from __future__ import annotations

import asyncio
import random
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from kernelevolve.eval.evaluator import Evaluator
from kernelevolve.eval.result import EvalResult
from kernelevolve.operators import tune
from kernelevolve.problem.problem import Problem, source_hash
from kernelevolve.search.graph import Graph, GraphNode
from kernelevolve.search.strategies import Strategy
from kernelevolve.store.models import Run
from kernelevolve.store.store import NodeRecord, Store

MAX_PROPOSAL_TRIES = 25


@dataclass
class SearchConfig:
    budget: int = 20  # nodes in the run, seed included
    time_s: float | None = None  # search wall time over all sessions of the run
    stall: int | None = None  # stop after this many nodes without a better best
    target_speedup: float | None = None
    max_inflight: int | None = None  # default: devices + 1
    trials: int = 3
    baseline: str = "eager"
    compile_baseline: bool | None = None
    timeout_s: float = 300.0


@dataclass
class Proposal:
    source: str
    source_hash: str
    operator: str
    params: dict[str, Any]
    parents: list[int]
    island: int = 0


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
    message: str = ""


class Driver:
    def __init__(
        self,
        store: Store,
        run: Run,
        problem: Problem,
        seed_source: str,
        strategy: Strategy,
        evaluators: list[Evaluator],
        config: SearchConfig,
        rng: random.Random,
        on_update: Callable[[Progress], None] | None = None,
    ):
        self.store = store
        self.run = run
        self.problem = problem
        self.seed_source = seed_source
        self.strategy = strategy
        self.evaluators = evaluators
        self.config = config
        self.rng = rng
        self.on_update = on_update or (lambda p: None)
        self.graph = Graph.from_store(store.nodes(run.id))
        self.sources: dict[int, str] = {}
        self.inflight_hashes: set[str] = set()
        self.progress = Progress(budget=config.budget, time_s=config.time_s)
        self.stop_reason = ""
        self._started = time.monotonic()
        self._elapsed_before = run.elapsed_s or 0.0
        self._pending = store.runs_dir / run.id / "pending"

    # ---- bookkeeping ----

    def _elapsed(self) -> float:
        return self._elapsed_before + time.monotonic() - self._started

    def _source(self, node_id: int) -> str:
        if node_id not in self.sources:
            row = next(n for n in self.store.nodes(self.run.id) if n.id == node_id)
            self.sources[node_id] = self.store.path(row.kernel_path).read_text()
        return self.sources[node_id]

    def _stalled(self) -> bool:
        if not self.config.stall:
            return False
        best = self.graph.best()
        if best is None:
            return False
        since = len(self.graph.order) - self.graph.order.index(best.id) - 1
        return since >= self.config.stall

    def _should_stop(self) -> str:
        best = self.graph.best()
        if len(self.graph) + len(self.inflight_hashes) >= self.config.budget:
            return f"budget of {self.config.budget} nodes reached"
        if self.config.time_s is not None and self._elapsed() >= self.config.time_s:
            return f"time limit of {self.config.time_s:g} s reached"
        if self._stalled():
            return f"no improvement in {self.config.stall} nodes"
        if self.config.target_speedup and best and (best.speedup or 0) >= self.config.target_speedup:
            return f"target speedup {self.config.target_speedup:g}x reached"
        return ""

    def _refresh(self, message: str = "") -> None:
        p = self.progress
        p.nodes, p.inflight, p.elapsed_s = len(self.graph), len(self.inflight_hashes), self._elapsed()
        p.statuses = Counter(n.status for n in self.graph.nodes.values())
        best = self.graph.best()
        p.best_fitness, p.best_node = (best.fitness, best.id) if best else (None, None)
        if message:
            p.message = message
        self.on_update(p)

    # ---- proposing ----

    def _propose(self) -> Proposal | None:
        """A new, never-seen candidate from the strategy's selection and the tune operator."""
        known = {n.source_hash for n in self.graph.nodes.values()} | self.inflight_hashes
        for _ in range(MAX_PROPOSAL_TRIES):
            selection = self.strategy.select(self.graph)
            if selection is None:
                return None
            sources = [self._source(p) for p in selection.parents]
            try:
                if len(sources) == 2:
                    try:
                        source, params = tune.crossover(sources[0], sources[1], self.rng)
                        operator = "crossover"
                    except tune.TuneError:
                        source, params = tune.mutate(sources[0], self.rng)
                        operator, selection.parents = "tune", selection.parents[:1]
                else:
                    source, params = tune.mutate(sources[0], self.rng)
                    operator = "tune"
            except tune.TuneError as e:
                self.stop_reason = f"cannot tune: {e}"
                return None
            h = source_hash(source)
            if h not in known:
                return Proposal(source, h, operator, params, selection.parents, selection.island)
        return None

    # ---- evaluating ----

    async def _evaluate(
        self, proposal: Proposal, free: asyncio.Queue
    ) -> tuple[Proposal, EvalResult, float, int | None]:
        reused = self.store.find_evaluated(self.problem.hash, self.run.platform, proposal.source_hash)
        if reused is not None:  # evaluated before, in this or another run: never twice
            node, result = reused
            return proposal, result, 0.0, node.id
        self._pending.mkdir(parents=True, exist_ok=True)
        path = self._pending / f"{proposal.source_hash}.py"
        path.write_text(proposal.source)
        evaluator = await free.get()
        try:
            t0 = time.monotonic()
            result = await asyncio.to_thread(
                evaluator.evaluate,
                self.problem,
                path,
                trials=self.config.trials,
                baseline=self.config.baseline,
                compile_baseline=self.config.compile_baseline,
            )
            return proposal, result, time.monotonic() - t0, None
        finally:
            free.put_nowait(evaluator)
            path.unlink(missing_ok=True)

    def _commit(self, proposal: Proposal, result: EvalResult, wall_s: float, reused_from: int | None) -> GraphNode:
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
            wall_s=wall_s,
            island=proposal.island,
            reused_from=reused_from,
        )
        row = self.store.add_node(
            self.run.id, record, strategy_state=self.strategy.state, visit_updates=updates, elapsed_s=self._elapsed()
        )
        node.id = row.id
        self.graph.add(node)
        self.sources[node.id] = proposal.source
        return node

    async def _search(self) -> str:
        free: asyncio.Queue = asyncio.Queue()
        for ev in self.evaluators:
            free.put_nowait(ev)
        if not self.graph.nodes:
            params = tune.current_values(self.seed_source) if _has_tunables(self.seed_source) else {}
            seed = Proposal(self.seed_source, source_hash(self.seed_source), "seed", params, [])
            self._refresh("evaluating the seed kernel")
            self._commit(*await self._evaluate(seed, free))
        if self.graph.best() is None:
            seed = self.graph.nodes[self.graph.order[0]]
            return f"the seed kernel is not correct ({seed.status}); fix it before searching"
        max_inflight = self.config.max_inflight or len(self.evaluators) + 1
        tasks: set[asyncio.Task] = set()
        reason = ""
        while True:
            while not reason and len(tasks) < max_inflight:
                reason = self._should_stop()
                if reason:
                    break
                proposal = self._propose()
                if proposal is None:
                    reason = (
                        self.stop_reason
                        or f"search space exhausted: no new candidate in {MAX_PROPOSAL_TRIES} proposals"
                    )
                    break
                self.inflight_hashes.add(proposal.source_hash)
                tasks.add(asyncio.create_task(self._evaluate(proposal, free)))
                self._refresh()
            if not tasks:
                return reason
            done, tasks = await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
            for task in done:
                proposal, result, wall, reused = task.result()
                self.inflight_hashes.discard(proposal.source_hash)
                node = self._commit(proposal, result, wall, reused)
                self._refresh(f"node {node.id}: {node.status}" + (f" {node.fitness:.3f}" if node.fitness else ""))

    def run_search(self) -> str:
        """Run until a stop rule; returns why it stopped. The run's status is updated in the store."""
        self.store.update_run(self.run.id, status="running", budget=self.config.budget)
        try:
            reason = asyncio.run(self._search())
        except BaseException:
            self.store.update_run(self.run.id, status="interrupted", elapsed_s=self._elapsed())
            raise
        self.store.update_run(self.run.id, status="done", stop_reason=reason, elapsed_s=self._elapsed())
        self._refresh(reason)
        return reason


def _has_tunables(source: str) -> bool:
    try:
        return bool(tune.find_tunables(source))
    except (tune.TuneError, SyntaxError):
        return False
