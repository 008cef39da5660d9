"""The universal LLM operator: one prompt, synthesised at each step from what the search knows.

Draft steps (no parent) ask for an independent kernel from the problem alone; refine steps show the
parent kernel, its evaluation (status, reason, per-case errors and timings, log tail) and its lineage.
`directives` and `knowledge` are the hooks the memory and retrieval agents fill in.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from jinja2 import Environment, FileSystemLoader, StrictUndefined

from kernelevolve.llm.base import LLMError, LLMResponse, Message
from kernelevolve.llm.pricing import PriceTable
from kernelevolve.llm.registry import Ensemble
from kernelevolve.platforms.base import Platform
from kernelevolve.problem.problem import Problem
from kernelevolve.result import EvalResult

TEMPLATES = Environment(
    loader=FileSystemLoader(Path(__file__).parent / "templates"),
    undefined=StrictUndefined,
    keep_trailing_newline=True,
    trim_blocks=False,
)
LOG_TAIL_CHARS = 1500


@dataclass
class ParentContext:
    id: int
    operator: str
    source: str
    result: EvalResult | None
    lineage: list[dict[str, Any]] = field(default_factory=list)  # ancestors: id, operator, status, fitness, reason
    analysis: dict[str, Any] | None = None  # the memory agent's analysis of this node
    history: list[dict[str, Any]] = field(default_factory=list)  # the node and its ancestors, with strategies


@dataclass
class Proposed:
    """What one LLM step produced: a source to evaluate, or why there is none."""

    response: LLMResponse | None
    prompt: str
    source: str | None = None
    kind: str = ""  # "file" | "edit"
    error: str = ""
    arm: Any = None  # the ensemble member that answered, credited after evaluation


def _render(messages: list[Message]) -> str:
    return "\n\n".join(f"## {m.role}\n\n{m.content}" for m in messages)


def shape_cases_literal(source: str) -> list[dict[str, Any]]:
    try:
        for node in ast.parse(source).body:
            if isinstance(node, ast.Assign) and any(getattr(t, "id", "") == "SHAPE_CASES" for t in node.targets):
                return list(ast.literal_eval(node.value))
    except (SyntaxError, ValueError):
        pass
    return []


class UniversalOperator:
    def __init__(
        self,
        ensemble: Ensemble,
        problem: Problem,
        platform: Platform,
        *,
        prices: PriceTable | None = None,
        max_tokens: int = 8192,
        temperature: float = 0.7,
        agent_budget: int = 0,
    ):
        self.ensemble = ensemble
        self.problem = problem
        self.platform = platform
        self.prices = prices or PriceTable()
        self.max_tokens = max_tokens
        self.temperature = temperature
        self.agent_budget = agent_budget  # > 0: agentic mode, that many commands per step

    def messages(
        self,
        parent: ParentContext | None,
        *,
        draft_index: int = 1,
        directives: list[str] | None = None,
        knowledge: list[str] | None = None,
    ) -> list[Message]:
        languages = ", ".join(lang for lang in self.platform.languages if lang != "pytorch")
        note = self.platform.note
        if self.platform.interpreted:
            note = (note + " " if note else "") + "Only C++ kernels are timed here; prefer them."
        context = {
            "languages": languages,
            "platform": {
                "name": self.platform.name,
                "device": self.platform.device_type,
                "languages": languages,
                "note": note,
            },
            "problem": {
                "name": self.problem.name,
                "source": self.problem.source.strip(),
                "cases": shape_cases_literal(self.problem.source),
            },
            "parent": self._parent(parent),
            "lineage": parent.lineage if parent else [],
            "draft_index": draft_index,
            "directives": directives or [],
            "knowledge": knowledge or [],
        }
        return [
            Message("system", TEMPLATES.get_template("system.j2").render(**context).strip()),
            Message("user", TEMPLATES.get_template("user.j2").render(**context).strip()),
        ]

    def _parent(self, parent: ParentContext | None) -> dict[str, Any] | None:
        if parent is None:
            return None
        r = parent.result
        cases = []
        for c in r.cases if r else []:
            cases.append(
                {
                    "shape": " ".join(f"{k}={v}" for k, v in c.shape.items()) or "-",
                    "correct": c.correct,
                    "max_abs_err": f"{c.max_abs_err:.2e}" if c.max_abs_err is not None else "-",
                    "t_candidate_ms": f"{c.t_candidate_ms:.4f}" if c.t_candidate_ms else "-",
                    "t_eager_ms": f"{c.t_eager_ms:.4f}" if c.t_eager_ms else "-",
                    "speedup": f"{c.speedup:.3f}" if c.speedup else "-",
                }
            )
        failed = r is not None and not r.correct
        return {
            "id": parent.id,
            "operator": parent.operator,
            "source": parent.source.strip(),
            "status": r.status.value if r else "unknown",
            "fitness": r.fitness if r else None,
            "baseline": r.baseline if r else "eager",
            "reason": r.reason if r else "",
            "cases": cases,
            "log_tail": r.log_tail.strip()[-LOG_TAIL_CHARS:] if failed and r.log_tail.strip() else "",
        }

    def propose(self, parent: ParentContext | None, **prompt_kw: Any) -> Proposed:
        """One step. Never raises for a bad response or an unreachable model: the failure is in `error`."""
        from kernelevolve.operators.edits import EditError, apply_response

        messages = self.messages(parent, **prompt_kw)
        arm = self.ensemble.choose()
        if self.agent_budget > 0:
            return self._agent_step(arm, messages, parent)
        prompt = _render(messages)
        try:
            response = arm.client.complete(messages, max_tokens=self.max_tokens, temperature=self.temperature)
        except LLMError as e:
            self.ensemble.record(arm, 0.0, False)
            return Proposed(None, prompt, error=str(e))
        response.cost = self.prices.cost(response.model, response.prompt_tokens, response.completion_tokens)
        try:
            source, kind = apply_response(response.text, parent.source if parent else None)
        except EditError as e:
            self.ensemble.record(arm, response.cost, False)
            return Proposed(response, prompt, error=f"unusable response: {e}", arm=arm)
        return Proposed(response, prompt, source=source, kind=kind, arm=arm)

    def _agent_step(self, arm: Any, messages: list[Message], parent: ParentContext | None) -> Proposed:
        """The agent loop; recorded as one call whose response is the submitted file (so replay serves it)."""
        from kernelevolve.operators.agent import run_agent
        from kernelevolve.operators.check import fast_check

        result = run_agent(
            arm.client,
            messages,
            parent.source if parent else None,
            check=lambda source: fast_check(source, self.platform.name),
            budget=self.agent_budget,
            max_tokens=self.max_tokens,
            temperature=self.temperature,
        )
        prompt = _render(result.transcript)
        if not result.responses:
            self.ensemble.record(arm, 0.0, False)
            return Proposed(None, prompt, error=result.error)
        response = LLMResponse(
            text=f"```python\n{result.source.rstrip()}\n```\n" if result.source else result.error,
            model=result.responses[0].model,
            prompt_tokens=sum(r.prompt_tokens for r in result.responses),
            completion_tokens=sum(r.completion_tokens for r in result.responses),
            latency_s=sum(r.latency_s for r in result.responses),
        )
        response.cost = self.prices.cost(response.model, response.prompt_tokens, response.completion_tokens)
        if result.source is None:
            self.ensemble.record(arm, response.cost, False)
            return Proposed(response, prompt, error=f"unusable response: {result.error}", arm=arm)
        return Proposed(response, prompt, source=result.source, kind="agent", arm=arm)

    def feedback(self, proposed: Proposed, correct: bool) -> None:
        """After evaluation: credit the model that wrote the candidate (adaptive ensemble choice)."""
        if proposed.arm is not None and proposed.response is not None:
            self.ensemble.record(proposed.arm, proposed.response.cost, correct)
