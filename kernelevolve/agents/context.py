"""The memory agent's side of a step: what the prompt is told about a parent, and the analysis of a result.

DESIGN.md gives prompt assembly to the memory agent: the parent and its lineage (with the strategies tried and
whether they helped), the diagnosis of the parent's evaluation, directives built from it, an earlier run's best
kernel for a draft, and what deep search retrieves for this platform, bottleneck and phase. It reads the store by
node id, so it needs nothing of the search's own structures.
"""

from __future__ import annotations

from typing import Any

from kernelevolve.agents import memory
from kernelevolve.agents.lessons import PastKernel
from kernelevolve.operators.base import ParentContext, PromptContext
from kernelevolve.result import EvalResult
from kernelevolve.store.store import Store

LINEAGE_DEPTH = 6  # the node and its nearest ancestors shown in a prompt
KNOWLEDGE_TOKENS = 1200


class MemoryAgent:
    def __init__(
        self,
        store: Store,
        problem_name: str,
        platform: str,
        *,
        warm_start: list[PastKernel] | None = None,
        knowledge: Any = None,
    ):
        """knowledge: a retrieval.KnowledgeBase (None: no deep search); warm_start: earlier runs' best kernels."""
        self.store = store
        self.problem_name = problem_name
        self.platform = platform
        self.warm_start = list(warm_start or [])
        self.knowledge = knowledge

    def parent(self, ancestors: list[int]) -> ParentContext:
        """The parent as the prompt shows it; `ancestors` starts with the parent itself, nearest first."""
        lineage = []
        for node_id in ancestors[:LINEAGE_DEPTH]:
            node = self.store.node(node_id)
            result = self.store.evaluation(node_id)
            parent = self.store.node(node.parents[0].parent_id) if node.parents else None
            lineage.append(
                {
                    "id": node_id,
                    "operator": node.operator,
                    "status": node.status,
                    "fitness": node.fitness,
                    "reason": result.reason[:200] if result else "",
                    "strategy": (self.store.analysis(node_id) or {}).get("strategy", ""),
                    "parent_fitness": parent.fitness if parent else None,
                }
            )
        node_id = ancestors[0]
        return ParentContext(
            node_id,
            lineage[0]["operator"],
            self.store.source(node_id),
            self.store.evaluation(node_id),
            lineage[1:],
            analysis=self.store.analysis(node_id),
            history=lineage,
        )

    def prompt(self, parent: ParentContext | None) -> PromptContext:
        """Directives from the parent's diagnosis and failed strategies, and knowledge from deep search."""
        analysis = (
            memory.Analysis(**{k: v for k, v in parent.analysis.items() if k in memory.Analysis.__annotations__})
            if parent and parent.analysis
            else None
        )
        failed = memory.failed_strategies(parent.history) if parent else []
        phase = (
            "draft" if parent is None else ("debug" if analysis and analysis.bottleneck == "correctness" else "refine")
        )
        query = " ".join(
            [
                self.problem_name,
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
            for sn in self.knowledge.search(query, platform=self.platform, phase=phase, budget_tokens=KNOWLEDGE_TOKENS):
                knowledge.append(f"### {sn.path}: {sn.heading}\n\n{sn.text}")
        return PromptContext(directives=memory.directives(analysis, failed), knowledge=knowledge)


def analyse_step(result: EvalResult, strategy: str) -> dict[str, Any]:
    """The memory agent's analysis of a finished step, stored with its node; `strategy` is what the operator
    said the change tries (the model's prose, or the tuned values)."""
    data = memory.analyse(-1, result).to_dict()
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
