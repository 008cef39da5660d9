"""What the driver hands an operator, and what an operator hands back.

Every operator (the universal LLM operator, the tune operator, replay) takes a `Request` and returns a
`Proposal`; the driver deduplicates, evaluates and stores it, then gives the result back through the operator's
`feedback`. The protocol itself is `search/ports.py`'s `Propose`.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from kernelevolve.result import EvalResult
from kernelevolve.store.store import LLMCallRecord


@dataclass
class ParentContext:
    """A parent as a prompt shows it: its source and evaluation, its lineage, the memory agent's analysis."""

    id: int
    operator: str
    source: str
    result: EvalResult | None
    lineage: list[dict[str, Any]] = field(default_factory=list)  # ancestors: id, operator, status, fitness, reason
    analysis: dict[str, Any] | None = None  # the memory agent's analysis of this node
    history: list[dict[str, Any]] = field(default_factory=list)  # the node and its ancestors, with strategies
    children: list[dict[str, Any]] = field(default_factory=list)  # its children so far: id, operator, status, ...


@dataclass
class PromptContext:
    """What the memory agent and deep search add to a prompt (agents/context.py)."""

    directives: list[str] = field(default_factory=list)
    knowledge: list[str] = field(default_factory=list)
    knowledge_paths: list[str] = field(default_factory=list)  # the knowledge-base documents injected, in order
    knowledge_query: str = ""  # what deep search was asked
    drafts: list[dict[str, Any]] = field(default_factory=list)  # a draft step: the run's earlier drafts


@dataclass
class Request:
    """One step's question to an operator: improve these parents (none: draft a kernel from the problem)."""

    parents: list[int]
    island: int = 0
    sources: list[str] = field(default_factory=list)  # the parents' kernels, in order
    parent: ParentContext | None = None  # LLM steps: the first parent as the prompt shows it
    context: PromptContext = field(default_factory=PromptContext)
    draft_index: int = 1  # which draft this is, for a draft's prompt
    seq: int = 0  # the LLM call's number in the run
    known: frozenset[str] = frozenset()  # source hashes already in the run or in flight
    rng: random.Random = field(default_factory=random.Random)
    reselect: Callable[[], Request | None] | None = None  # another request, for an operator that found nothing new


@dataclass
class Proposal:
    """A candidate to evaluate, or (source None) why there is none; `result` set: judged without evaluation."""

    operator: str
    parents: list[int]
    source: str | None = None
    source_hash: str = ""
    params: dict[str, Any] = field(default_factory=dict)
    island: int = 0
    result: EvalResult | None = None  # an unusable answer, already rejected: stored as a node, not evaluated
    call: LLMCallRecord | None = None  # the LLM call behind it, recorded with the node (or alone)
    strategy: str = ""  # what the change tries, for the memory agent
    note: str = ""  # why there is no candidate
    stop: str = ""  # the operator can propose nothing more: the run's stop reason
    pending: str = ""  # a deferred model took the prompt and has not answered: where it waits (call holds it)
    knowledge: list[str] = field(default_factory=list)  # knowledge-base documents the prompt carried
    meta: dict[str, Any] = field(default_factory=dict)  # the operator's own bookkeeping, returned to its feedback
