"""The asynchronous search driver: select -> propose -> evaluate -> store -> observe, until a stop rule.

The strategy selects in the event loop; each step (an LLM call in a thread, or the tune operator, then
the evaluation in a thread) runs as a task, several in flight, one evaluator per device, so generation
never holds a device. Every finished step is committed before the strategy sees it; a crash loses only
what was in flight.
"""

from __future__ import annotations

import asyncio
import random
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from textwrap import shorten
from typing import Any

from kernelevolve.agents import lessons, memory
from kernelevolve.eval.evaluator import Evaluator
from kernelevolve.operators import tune
from kernelevolve.operators.universal import ParentContext, Proposed, UniversalOperator
from kernelevolve.problem.problem import Problem, source_hash
from kernelevolve.result import EvalResult, Status
from kernelevolve.search.graph import Graph, GraphNode
from kernelevolve.search.strategies import Selection, Strategy
from kernelevolve.store.models import Run
from kernelevolve.store.store import LLMCallRecord, NodeRecord, Store

MAX_PROPOSAL_TRIES = 25
MAX_LLM_FAILURES = 3  # consecutive calls that reached no model: stop and say why


@dataclass
class SearchConfig:
    budget: int = 20  # nodes in the run, seed included
    time_s: float | None = None  # search wall time over all sessions of the run
    stall: int | None = None  # stop after this many nodes without a better best
    target_speedup: float | None = None
    max_cost: float | None = None  # USD of LLM calls over the run
    max_inflight: int | None = None  # default: devices + 1
    draft_steps: int = 3  # LLM steps that write independent kernels from the problem alone
    tune_p: float = 0.25  # with an LLM: share of steps given to the tune operator when the parent has tunables
    trials: int = 3
    baseline: str = "eager"
    compile_baseline: bool | None = None
    profile: str = "auto"  # what the harness collects for the memory agent on cuda: off | auto | ncu


@dataclass
class Proposal:
    source: str
    source_hash: str
    operator: str
    params: dict[str, Any]
    parents: list[int]
    island: int = 0


@dataclass
class StepOutcome:
    proposal: Proposal | None
    result: EvalResult | None = None
    wall_s: float = 0.0
    reused_from: int | None = None
    llm: Proposed | None = None
    llm_seq: int = 0
    parents: list[int] = field(default_factory=list)  # what an LLM step was asked to improve
    note: str = ""  # why a step produced no node


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
    def __init__(
        self,
        store: Store,
        run: Run,
        problem: Problem,
        seed_source: str | None,
        strategy: Strategy,
        evaluators: list[Evaluator],
        config: SearchConfig,
        rng: random.Random,
        on_update: Callable[[Progress], None] | None = None,
        llm: UniversalOperator | None = None,
        warm_start: list | None = None,
        starts: list[tuple[str, str]] | None = None,
    ):
        self.store = store
        self.run = run
        self.problem = problem
        self.seed_source = seed_source
        self.strategy = strategy
        self.evaluators = evaluators
        self.config = config
        self.rng = rng
        self.llm = llm
        self.replay = _replay_client(llm)
        self.on_update = on_update or (lambda p: None)
        self.graph = Graph.from_store(store.nodes(run.id))
        self.sources: dict[int, str] = {}
        self.inflight_hashes: set[str] = set()
        self.inflight_drafts = 0
        calls = store.llm_calls(run.id)
        self.llm_seq = max((c["seq"] for c in calls), default=0)
        self.cost = sum(c["cost"] for c in calls)
        self.llm_failures = 0
        self.last_llm_error = ""
        self.replay_ids: dict[int, int] = {}  # recorded node id -> node id in this run
        self.knowledge = _knowledge_base() if llm is not None else None
        self.warm_start = list(warm_start or [])  # lessons.PastKernel: best kernels of similar earlier problems
        # (name, source): more starting kernels beside the seed (alternatives for some shapes, say), each a node of
        # its own that the operators can expand and the export can dispatch to
        self.starts = list(starts or [])
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

    def _inflight(self) -> int:
        return len(self._tasks)

    def _stalled(self) -> bool:
        best = self.graph.best()
        if not self.config.stall or best is None:
            return False
        return len(self.graph.order) - self.graph.order.index(best.id) - 1 >= self.config.stall

    def _should_stop(self) -> str:
        best = self.graph.best()
        if len(self.graph) + self._inflight() >= self.config.budget:
            return f"budget of {self.config.budget} nodes reached"
        if self.config.time_s is not None and self._elapsed() >= self.config.time_s:
            return f"time limit of {self.config.time_s:g} s reached"
        if self._stalled():
            return f"no improvement in {self.config.stall} nodes"
        if self.config.target_speedup and best and (best.speedup or 0) >= self.config.target_speedup:
            return f"target speedup {self.config.target_speedup:g}x reached"
        if self.config.max_cost is not None and self.cost >= self.config.max_cost:
            return f"LLM cost budget of ${self.config.max_cost:g} reached (${self.cost:.4f} spent)"
        if self.llm_failures >= MAX_LLM_FAILURES:
            return f"the LLM failed {self.llm_failures} times in a row: {self.last_llm_error}"
        if self.replay is not None and self.replay.remaining() == 0:
            return "replay: every recorded response has been served"
        return ""

    def _refresh(self, message: str = "") -> None:
        p = self.progress
        p.nodes, p.inflight, p.elapsed_s, p.cost = len(self.graph), self._inflight(), self._elapsed(), self.cost
        p.statuses = Counter(n.status for n in self.graph.nodes.values())
        best = self.graph.best()
        p.best_fitness, p.best_node = (best.fitness, best.id) if best else (None, None)
        if message:
            p.message = message
        self.on_update(p)

    def _known(self) -> set[str]:
        return {n.source_hash for n in self.graph.nodes.values()} | self.inflight_hashes

    # ---- choosing the next step ----

    def _next_step(self) -> tuple[str, Selection | None] | None:
        """('draft', None) | ('llm', selection) | ('tune', selection), or None when nothing can be proposed."""
        if self.replay is not None:
            recorded = self.replay.peek_parents()
            if recorded is None:
                return None
            parents = [self.replay_ids.get(p, p) for p in recorded]
            return ("llm", Selection(parents)) if parents else ("draft", None)
        if self.llm is not None:
            drafts = sum(1 for n in self.graph.nodes.values() if n.operator == "llm-draft") + self.inflight_drafts
            if drafts < self.config.draft_steps or self.graph.best() is None:
                return "draft", None
        selection = self.strategy.select(self.graph)
        if selection is None:
            return None
        if self.llm is None:
            return "tune", selection
        tunable = _has_tunables(self._source(selection.parents[0]))
        return ("tune" if tunable and self.rng.random() < self.config.tune_p else "llm"), selection

    def _tune(self, selection: Selection) -> Proposal | None:
        known = self._known()
        for attempt in range(MAX_PROPOSAL_TRIES):
            if attempt:
                selection = self.strategy.select(self.graph) or selection
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

    def _parent_context(self, node_id: int) -> ParentContext:
        node = self.graph.nodes[node_id]
        lineage = []
        for a in self.graph.ancestors(node_id)[:6]:
            an = self.graph.nodes[a]
            r = self.store.evaluation(a)
            analysis = self.store.analysis(a) or {}
            parent = self.graph.nodes.get(an.parents[0]) if an.parents else None
            lineage.append(
                {
                    "id": a,
                    "operator": an.operator,
                    "status": an.status,
                    "fitness": an.fitness,
                    "reason": (r.reason[:200] if r else ""),
                    "strategy": analysis.get("strategy", ""),
                    "parent_fitness": parent.fitness if parent else None,
                }
            )
        return ParentContext(
            node_id,
            node.operator,
            self._source(node_id),
            self.store.evaluation(node_id),
            lineage[1:],
            analysis=self.store.analysis(node_id),
            history=lineage,
        )

    def _analysis(self, outcome: StepOutcome) -> dict[str, Any]:
        """The memory agent's analysis of a finished step, stored with its node."""
        analysis = memory.analyse(-1, outcome.result)
        data = analysis.to_dict()
        proposal = outcome.proposal
        if outcome.llm is not None and outcome.llm.response is not None:
            data["strategy"] = memory.strategy_of(outcome.llm.response.text)
        elif proposal.operator in ("tune", "crossover") and proposal.parents:
            before = self.graph.nodes[proposal.parents[0]].params
            changed = {k: v for k, v in proposal.params.items() if before.get(k) != v}
            data["strategy"] = f"{proposal.operator}: " + ", ".join(f"{k}={v}" for k, v in sorted(changed.items()))
        return data

    def _prompt_context(self, parent: ParentContext | None) -> dict[str, Any]:
        """Directives from the memory agent and knowledge from deep search, for the operator's prompt."""
        analysis = (
            memory.Analysis(**{k: v for k, v in parent.analysis.items() if k in memory.Analysis.__annotations__})
            if parent and parent.analysis
            else None
        )
        failed = memory.failed_strategies(parent.history) if parent else []
        directives = memory.directives(analysis, failed)
        phase = (
            "draft" if parent is None else ("debug" if analysis and analysis.bottleneck == "correctness" else "refine")
        )
        query = " ".join(
            [
                self.problem.name,
                analysis.summary if analysis else "",
                analysis.bottleneck if analysis else "",
                " ".join(analysis.advice) if analysis else "",
                phase,
            ]
        )
        knowledge = []
        if parent is None:
            for past in self.warm_start[:1]:
                knowledge.append(
                    f"### The best kernel of a similar earlier problem ({past.problem}, fitness "
                    f"{past.fitness:.3f}); adapt it, do not copy blindly\n\n```python\n{past.source}\n```"
                )
        if self.knowledge is not None:
            for sn in self.knowledge.search(query, platform=self.run.platform, phase=phase, budget_tokens=1200):
                knowledge.append(f"### {sn.path}: {sn.heading}\n\n{sn.text}")
        return {"directives": directives, "knowledge": knowledge}

    # ---- steps ----

    async def _llm_step(self, selection: Selection | None, free: asyncio.Queue, seq: int) -> StepOutcome:
        parent = self._parent_context(selection.parents[0]) if selection else None
        draft_index = sum(1 for n in self.graph.nodes.values() if n.operator == "llm-draft") + 1
        context = self._prompt_context(parent)
        proposed = await asyncio.to_thread(self.llm.propose, parent, draft_index=draft_index, **context)
        operator = "llm" if selection else "llm-draft"
        parents = selection.parents[:1] if selection else []
        if proposed.response is None:  # the model could not be reached
            return StepOutcome(None, llm=proposed, llm_seq=seq, parents=parents, note=proposed.error)
        if proposed.source is None:  # unusable: recorded as a failed proposal, its reason fed back
            text = proposed.response.text
            result = EvalResult(status=Status.REJECTED, correct=False, reason=proposed.error).finalize()
            proposal = Proposal(text, source_hash(text + proposed.error), operator, {}, parents)
            if proposal.source_hash in self._known():
                return StepOutcome(None, llm=proposed, llm_seq=seq, parents=parents, note="duplicate unusable response")
            return StepOutcome(proposal, result=result, llm=proposed, llm_seq=seq)
        h = source_hash(proposed.source)
        if h in self._known():
            return StepOutcome(
                None, llm=proposed, llm_seq=seq, parents=parents, note="duplicate: the model returned a known kernel"
            )
        params = tune.current_values(proposed.source) if _has_tunables(proposed.source) else {}
        proposal = Proposal(proposed.source, h, operator, params, parents, selection.island if selection else 0)
        self.inflight_hashes.add(h)
        outcome = await self._evaluate(proposal, free)
        outcome.llm, outcome.llm_seq, outcome.parents = proposed, seq, parents
        return outcome

    async def _evaluate(self, proposal: Proposal, free: asyncio.Queue) -> StepOutcome:
        reused = self.store.find_evaluated(self.problem.hash, self.run.platform, proposal.source_hash)
        if reused is not None:  # evaluated before, in this or another run: never twice
            node, result = reused
            return StepOutcome(proposal, result, 0.0, node.id)
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
                profile=self.config.profile,
            )
            return StepOutcome(proposal, result, time.monotonic() - t0)
        finally:
            free.put_nowait(evaluator)
            path.unlink(missing_ok=True)

    def _commit(self, outcome: StepOutcome) -> GraphNode | None:
        llm_call = None
        if outcome.llm is not None:
            r = outcome.llm.response
            self.cost += r.cost if r else 0.0
            if r is None:
                self.llm_failures += 1
                self.last_llm_error = outcome.note
            else:
                self.llm_failures = 0
            status = "error" if r is None else ("unusable" if outcome.llm.source is None else "ok")
            if outcome.note.startswith("duplicate"):
                status = "duplicate"
            parents = outcome.proposal.parents if outcome.proposal else outcome.parents
            llm_call = LLMCallRecord(
                seq=outcome.llm_seq,
                model=r.model if r else "",
                parents=parents,
                prompt=outcome.llm.prompt,
                response=r.text if r else outcome.note,
                prompt_tokens=r.prompt_tokens if r else 0,
                completion_tokens=r.completion_tokens if r else 0,
                cost=r.cost if r else 0.0,
                latency_s=r.latency_s if r else 0.0,
                outcome=status,
            )
            if outcome.proposal is None:
                self.store.add_llm_call(self.run.id, llm_call)
                return None
            if outcome.result is not None and self.llm is not None:
                self.llm.feedback(outcome.llm, outcome.result.correct)
        proposal, result = outcome.proposal, outcome.result
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
            llm_call=llm_call,
            analysis=self._analysis(outcome),
        )
        row = self.store.add_node(
            self.run.id, record, strategy_state=self.strategy.state, visit_updates=updates, elapsed_s=self._elapsed()
        )
        node.id = row.id
        self.graph.add(node)
        self.sources[node.id] = proposal.source
        if self.replay is not None and outcome.llm is not None and outcome.llm.response is not None:
            recorded = outcome.llm.response.extra.get("node_id")
            if recorded is not None:
                self.replay_ids[recorded] = node.id
        return node

    async def _search(self) -> str:
        free: asyncio.Queue = asyncio.Queue()
        for ev in self.evaluators:
            free.put_nowait(ev)
        self._tasks: set[asyncio.Task] = set()
        if not self.graph.nodes and self.seed_source is not None:
            self._refresh("evaluating the seed kernel")
            self._seed_commit(await self._evaluate(_root(self.seed_source, "seed"), free))
        for name, source in self.starts:
            if source_hash(source) not in self._known():  # not evaluated before a resume, not the seed's source
                self._refresh(f"evaluating the starting kernel {name}")
                self._commit_and_report(await self._evaluate(_root(source, "start"), free))
        if not any(n.operator == "warm-start" for n in self.graph.nodes.values()):
            for past in self.warm_start:
                if source_hash(past.source) not in self._known():
                    self._refresh(f"warm start: evaluating run {past.run_id}'s best kernel (node {past.node_id})")
                    self._commit_and_report(await self._evaluate(_root(past.source, "warm-start"), free))
        if self.llm is None and self.graph.best() is None:
            seed = self.graph.nodes[self.graph.order[0]]
            more = " (nor is any starting kernel)" if self.starts else ""
            return f"the seed kernel is not correct ({seed.status}){more}; fix it before searching"
        max_inflight = 1 if self.replay is not None else self.config.max_inflight or len(self.evaluators) + 1
        reason = ""
        while True:
            while not reason and len(self._tasks) < max_inflight:
                reason = self._should_stop()
                if reason:
                    break
                step = self._next_step()
                if step is None:
                    reason = self.stop_reason or "search space exhausted: nothing new to propose"
                    break
                kind, selection = step
                if kind == "tune":
                    proposal = self._tune(selection)
                    if proposal is None:
                        reason = (
                            self.stop_reason
                            or f"search space exhausted: no new candidate in {MAX_PROPOSAL_TRIES} proposals"
                        )
                        break
                    self.inflight_hashes.add(proposal.source_hash)
                    task = asyncio.create_task(self._evaluate(proposal, free))
                else:
                    self.llm_seq += 1
                    self.inflight_drafts += kind == "draft"
                    task = asyncio.create_task(self._llm_step(selection, free, self.llm_seq))
                    task.draft = kind == "draft"  # type: ignore[attr-defined]
                self._tasks.add(task)
                self._refresh()
            if not self._tasks:
                return reason
            done, self._tasks = await asyncio.wait(self._tasks, return_when=asyncio.FIRST_COMPLETED)
            for task in done:
                self.inflight_drafts -= getattr(task, "draft", False)
                outcome = task.result()
                if outcome.proposal is not None:
                    self.inflight_hashes.discard(outcome.proposal.source_hash)
                if self._commit_and_report(outcome) is None:
                    self._refresh(f"LLM step produced no candidate: {outcome.note[:120]}")

    def _commit_and_report(self, outcome: StepOutcome) -> GraphNode | None:
        """Commit, and say what the node scored; its first review note too (a busy host, a very large speedup),
        since a search would otherwise rank such results silently."""
        node = self._commit(outcome)
        if node is not None:
            review = outcome.result.review if outcome.result is not None else []
            self._refresh(
                f"node {node.id} ({node.operator}): {node.status}"
                + (f" {node.fitness:.3f}" if node.fitness else "")
                + (f" (review: {shorten(review[0], 200, placeholder=' ...')})" if review else "")
            )
        return node

    def _seed_commit(self, outcome: StepOutcome) -> None:
        node = self._commit_and_report(outcome)
        if self.replay is not None and node is not None:
            recorded_seed = self.replay.seed_node()
            if recorded_seed is not None:
                self.replay_ids[recorded_seed] = node.id

    def run_search(self) -> str:
        """Run until a stop rule; returns why it stopped. The run's status is updated in the store."""
        self.store.update_run(self.run.id, status="running", budget=self.config.budget)
        try:
            reason = asyncio.run(self._search())
        except BaseException:
            self.store.update_run(self.run.id, status="interrupted", elapsed_s=self._elapsed())
            raise
        self.store.update_run(self.run.id, status="done", stop_reason=reason, elapsed_s=self._elapsed())
        lessons.distill(self.store, self.run.id)
        self._refresh(reason)
        return reason


def _root(source: str, operator: str) -> Proposal:
    """A node with no parent: the seed, a starting kernel, an earlier run's best."""
    params = tune.current_values(source) if _has_tunables(source) else {}
    return Proposal(source, source_hash(source), operator, params, [])


def _has_tunables(source: str) -> bool:
    try:
        return bool(tune.find_tunables(source))
    except (tune.TuneError, SyntaxError):
        return False


def _knowledge_base():
    from kernelevolve.agents.retrieval import KnowledgeBase

    try:
        return KnowledgeBase()
    except (FileNotFoundError, ValueError):
        return None


def _replay_client(llm: UniversalOperator | None):
    if llm is None:
        return None
    from kernelevolve.llm.replay import ReplayClient

    clients = [a.client for a in llm.ensemble.arms]
    return clients[0] if len(clients) == 1 and isinstance(clients[0], ReplayClient) else None
