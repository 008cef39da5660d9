"""The memory agent's side of a step: what the prompt is told about a parent, and the analysis of a result.

DESIGN.md gives prompt assembly to the memory agent: the parent and its lineage (with the strategies tried and
whether they helped), what the parent's other children tried, the diagnosis of the parent's evaluation,
directives built from it, the run's earlier drafts for a draft, an earlier run's best kernel for a draft, and
what deep search retrieves for the operations the reference performs, the target's architecture, the
bottleneck and the phase. It reads the store by node id, so it needs nothing of the search's own structures.
"""

from __future__ import annotations

from typing import Any

from kernelevolve.agents import memory
from kernelevolve.agents.lessons import PastKernel
from kernelevolve.agents.retrieval import injected, knowledge_query, reference_ops
from kernelevolve.operators.base import ParentContext, PromptContext
from kernelevolve.platforms import hosted
from kernelevolve.platforms.facts import DeviceFacts, device_facts
from kernelevolve.result import EvalResult
from kernelevolve.store.store import Store

LINEAGE_DEPTH = 6  # the node and its nearest ancestors shown in a prompt
KNOWLEDGE_TOKENS = 1200
MAX_LISTED = 8  # earlier drafts, or a parent's other children, named in a prompt
REASON_CHARS = 200


class MemoryAgent:
    def __init__(
        self,
        store: Store,
        problem_name: str,
        platform: str,
        *,
        warm_start: list[PastKernel] | None = None,
        knowledge: Any = None,
        run_id: str | None = None,
        problem_source: str = "",
        facts: DeviceFacts | None = None,
    ):
        """knowledge: a retrieval.KnowledgeBase (None: no deep search); warm_start: earlier runs' best kernels;
        run_id: the run whose earlier drafts a draft's prompt names; problem_source: the reference, whose
        operations make the knowledge query; facts: the target's (None: this machine's, when first needed)."""
        self.store = store
        self.problem_name = problem_name
        self.platform = platform
        self.warm_start = list(warm_start or [])
        self.knowledge = knowledge
        self.run_id = run_id
        self.problem_source = problem_source
        self._facts = facts

    @property
    def facts(self) -> DeviceFacts:
        if self._facts is None:
            self._facts = device_facts(self.platform)
        return self._facts

    def _step(self, node_id: int) -> dict[str, Any]:
        """A node as a prompt's list shows it."""
        node = self.store.node(node_id)
        result = self.store.evaluation(node_id)
        return {
            "id": node_id,
            "operator": node.operator,
            "status": node.status,
            "fitness": node.fitness,
            "reason": memory.brief(result.reason, REASON_CHARS) if result and not result.correct else "",
            "strategy": (self.store.analysis(node_id) or {}).get("strategy", ""),
        }

    def parent(self, ancestors: list[int]) -> ParentContext:
        """The parent as the prompt shows it; `ancestors` starts with the parent itself, nearest first."""
        lineage = []
        for node_id in ancestors[:LINEAGE_DEPTH]:
            node = self.store.node(node_id)
            parent = self.store.node(node.parents[0].parent_id) if node.parents else None
            lineage.append({**self._step(node_id), "parent_fitness": parent.fitness if parent else None})
        node_id = ancestors[0]
        return ParentContext(
            node_id,
            lineage[0]["operator"],
            self.store.source(node_id),
            self.store.evaluation(node_id),
            lineage[1:],
            analysis=self.store.analysis(node_id),
            history=lineage,
            children=self.children(node_id),
        )

    def children(self, node_id: int) -> list[dict[str, Any]]:
        """The node's children so far (the latest MAX_LISTED), oldest first."""
        node = self.store.node(node_id)
        if node is None:
            return []
        kids = [n.id for n in self.store.nodes(node.run_id) if any(e.parent_id == node_id for e in n.parents)]
        return [self._step(k) for k in kids[-MAX_LISTED:]]

    def drafts(self) -> list[dict[str, Any]]:
        """The run's drafts so far (the latest MAX_LISTED), oldest first; [] without a run id."""
        if not self.run_id:
            return []
        ids = [n.id for n in self.store.nodes(self.run_id) if n.operator == "llm-draft"]
        return [self._step(i) for i in ids[-MAX_LISTED:]]

    def prompt(self, parent: ParentContext | None) -> PromptContext:
        """Directives from the parent's diagnosis and failed strategies, the run's earlier drafts for a draft, and
        knowledge from deep search (with the documents it came from)."""
        analysis = _analysis(parent.analysis) if parent and parent.analysis else None
        failed = memory.failed_strategies(parent.history) if parent else []
        phase = "draft" if parent is None else ("debug" if _failed(parent, analysis) else "refine")
        bottleneck = analysis.bottleneck if analysis and analysis.bottleneck != "unknown" else ""
        knowledge = []
        if parent is None:
            for past in self.warm_start[:1]:
                knowledge.append(
                    f"### The best kernel of a similar earlier problem ({past.problem}, fitness "
                    f"{past.fitness:.3f}); adapt it, do not copy blindly\n\n```python\n{past.source}\n```"
                )
        query, paths = "", []
        if self.knowledge is not None:
            query = self.query(phase, bottleneck, analysis)
            snippets = self.knowledge.search(
                query,
                platform=self.platform,
                arch=self.facts.arch,
                bottleneck=bottleneck or None,
                phase=phase,
                budget_tokens=KNOWLEDGE_TOKENS,
            )
            knowledge += [f"### {sn.path}: {sn.heading}\n\n{sn.text}" for sn in snippets]
            paths = injected(snippets)
        return PromptContext(
            directives=memory.directives(analysis, failed),
            knowledge=knowledge,
            knowledge_paths=paths,
            knowledge_query=query,
            drafts=self.drafts() if parent is None else [],
        )

    def query(self, phase: str, bottleneck: str, analysis: memory.Analysis | None) -> str:
        """Deep search's query: the reference's operations, the architecture, the bottleneck, the phase."""
        extra = " ".join([analysis.error_class, " ".join(analysis.advice)]) if analysis else ""
        return knowledge_query(
            reference_ops(self.problem_source),
            platform=self.platform,
            arch=self.facts.arch,
            isa=self.facts.isa,
            bottleneck=bottleneck,
            phase=phase,
            extra=extra,
        )


def _analysis(data: dict[str, Any]) -> memory.Analysis | None:
    """A stored analysis read back; None for one this version cannot read."""
    try:
        return memory.Analysis(**{k: v for k, v in data.items() if k in memory.Analysis.__annotations__})
    except TypeError:
        return None


def _failed(parent: ParentContext, analysis: memory.Analysis | None) -> bool:
    if analysis is not None:
        return analysis.bottleneck == "correctness"
    return parent.result is not None and not parent.result.correct


def analyse_step(result: EvalResult, strategy: str, facts: DeviceFacts | None = None) -> dict[str, Any]:
    """The memory agent's analysis of a finished step, stored with its node; `strategy` is what the operator
    said the change tries (the model's prose, or the tuned values). facts: the target's; on the cpu, where the
    harness records no roofline, this machine's give one."""
    if facts is None and hosted(result.target):
        facts = device_facts(result.target)
    data = memory.analyse(-1, result, facts).to_dict()
    if strategy:
        data["strategy"] = strategy
    return data


def knowledge_base() -> Any:
    """The shipped knowledge base, or None where it cannot be read (deep search is then skipped)."""
    from kernelevolve.agents.retrieval import KnowledgeBase

    try:
        return KnowledgeBase()
    except (FileNotFoundError, ValueError):
        return None
