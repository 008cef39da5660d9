"""The universal LLM operator: one prompt, synthesised at each step from what the search knows.

Draft steps (no parent) ask for an independent kernel from the problem alone; refine steps show the
parent kernel, its evaluation (status, reason, per-case errors and timings, log tail) and its lineage.
`directives` and `knowledge` are the hooks the memory and retrieval agents fill in.
"""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Any

from jinja2 import Environment, FileSystemLoader, StrictUndefined

from kernelevolve.eval.job import BUDGET_MULTIPLE
from kernelevolve.llm.base import LLMError, LLMResponse, Message
from kernelevolve.llm.pricing import PriceTable
from kernelevolve.llm.registry import Ensemble
from kernelevolve.operators.base import ParentContext, Proposal, Request
from kernelevolve.operators.tune import params_of
from kernelevolve.platforms.base import Platform
from kernelevolve.problem.problem import Problem, source_hash
from kernelevolve.result import EvalResult, Status
from kernelevolve.store.store import LLMCallRecord

__all__ = ["ParentContext", "UniversalOperator", "shape_cases_literal"]

TEMPLATES = Environment(
    loader=FileSystemLoader(Path(__file__).parent / "templates"),
    undefined=StrictUndefined,
    keep_trailing_newline=True,
    trim_blocks=False,
)
LOG_TAIL_CHARS = 1500
MAX_LLM_FAILURES = 3  # consecutive calls that reached no model: stop and say why


def render(messages: list[Message]) -> str:
    """A prompt as one Markdown text, as it is stored and as `--dry-run` writes it."""
    return "\n\n".join(f"## {m.role}\n\n{m.content}" for m in messages)


def shape_cases_literal(source: str) -> list[dict[str, Any]]:
    """SHAPE_CASES as the problem file writes it; [] where it has none, builds it by code, or does not parse."""
    from kernelevolve.problem.problem import literal

    try:
        cases = literal(ast.parse(source), "SHAPE_CASES")
    except (SyntaxError, ValueError):
        return []
    return list(cases) if isinstance(cases, (list, tuple)) else []


class UniversalOperator:
    name = "llm"

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
        self.cost = 0.0  # USD spent through this operator in this session
        self.failures = 0  # consecutive calls that reached no model
        self.last_error = ""

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
            "budget_multiple": f"{BUDGET_MULTIPLE:g}",
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

    def messages_for(self, request: Request) -> list[Message]:
        return self.messages(
            request.parent,
            draft_index=request.draft_index,
            directives=request.context.directives,
            knowledge=request.context.knowledge,
        )

    def propose(self, request: Request) -> Proposal:
        """One step. Never raises for a bad response or an unreachable model: the failure is in the proposal."""
        from kernelevolve.operators.edits import EditError, apply_response, strategy_of

        parent = request.parent
        messages = self.messages_for(request)
        operator, parents = ("llm", request.parents[:1]) if parent else ("llm-draft", [])
        arm = self.ensemble.choose()
        if self.agent_budget > 0:
            prompt, response, source, error = self._agent_step(arm, messages, parent)
        else:
            prompt, source, error = render(messages), None, ""
            try:
                response = arm.client.complete(messages, max_tokens=self.max_tokens, temperature=self.temperature)
            except LLMError as e:
                response, error = None, str(e)
            if response is not None:
                response.cost = self.prices.cost(response.model, response.prompt_tokens, response.completion_tokens)
                try:
                    source, _ = apply_response(response.text, parent.source if parent else None)
                except EditError as e:
                    error = f"unusable response: {e}"
        call = LLMCallRecord(
            seq=request.seq,
            model=response.model if response else "",
            parents=parents,
            prompt=prompt,
            response=response.text if response else error,
            prompt_tokens=response.prompt_tokens if response else 0,
            completion_tokens=response.completion_tokens if response else 0,
            cost=response.cost if response else 0.0,
            latency_s=response.latency_s if response else 0.0,
            outcome="error" if response is None else ("unusable" if source is None else "ok"),
        )
        self.cost += call.cost
        if response is None:  # the model could not be reached
            self.ensemble.record(arm, 0.0, False)
            self.failures += 1
            self.last_error = error
            return Proposal(operator, parents, call=call, note=error)
        self.failures = 0
        if source is None:  # unusable: a rejected node whose reason the next prompt carries
            self.ensemble.record(arm, call.cost, False)
            text = response.text
            rejected = EvalResult(status=Status.REJECTED, correct=False, reason=error).finalize()
            return Proposal(
                operator,
                parents,
                text,
                source_hash(text + error),
                result=rejected,
                call=call,
                strategy=strategy_of(text),
                meta={"arm": arm},
            )
        return Proposal(
            operator,
            parents,
            source,
            source_hash(source),
            params_of(source),
            request.island,
            call=call,
            strategy=strategy_of(response.text),
            meta={"arm": arm},
        )

    def _agent_step(
        self, arm: Any, messages: list[Message], parent: ParentContext | None
    ) -> tuple[str, LLMResponse | None, str | None, str]:
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
        prompt = render(result.transcript)
        if not result.responses:
            return prompt, None, None, result.error
        response = LLMResponse(
            text=f"```python\n{result.source.rstrip()}\n```\n" if result.source else result.error,
            model=result.responses[0].model,
            prompt_tokens=sum(r.prompt_tokens for r in result.responses),
            completion_tokens=sum(r.completion_tokens for r in result.responses),
            latency_s=sum(r.latency_s for r in result.responses),
        )
        response.cost = self.prices.cost(response.model, response.prompt_tokens, response.completion_tokens)
        if result.source is None:
            return prompt, response, None, f"unusable response: {result.error}"
        return prompt, response, result.source, ""

    def feedback(self, proposal: Proposal, result: EvalResult | None) -> None:
        """After the driver's dedup and evaluation: credit the model that wrote the candidate (adaptive ensemble
        choice); a known kernel (result None) is recorded as a duplicate and credits nothing."""
        arm = proposal.meta.get("arm")
        if arm is None or proposal.call is None:
            return
        if result is None:
            proposal.call.outcome = "duplicate"
        elif proposal.result is None:  # evaluated (an unusable answer was debited when it came)
            self.ensemble.record(arm, proposal.call.cost, result.correct)

    def stop_reason(self) -> str:
        if self.failures >= MAX_LLM_FAILURES:
            return f"the LLM failed {self.failures} times in a row: {self.last_error}"
        return ""
