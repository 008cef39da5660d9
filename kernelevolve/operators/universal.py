"""The universal LLM operator: one prompt, synthesised at each step from what the search knows.

Every prompt states what a model cannot guess: the device and its limits, the software that builds the kernel,
the correctness rule and kernel policy this run applies (`options`, the run's EvalOptions), how extensions are
built and what TUNABLES does. Draft steps (no parent) ask for an independent kernel from the problem alone,
naming the run's earlier drafts so each tries something else; refine and debug steps show the parent kernel,
its evaluation (status, reason, per-case errors and timings, the compiler's diagnostics), its lineage and what
its other children tried. `directives` and `knowledge` are what the memory and retrieval agents fill in.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path
from typing import Any

from jinja2 import Environment, FileSystemLoader, StrictUndefined

from kernelevolve.eval.rules import BUDGET_MULTIPLE, DISTRIBUTIONS
from kernelevolve.eval.wire import EvalOptions
from kernelevolve.llm.base import LLMError, LLMPending, LLMResponse, Message, render
from kernelevolve.llm.pricing import PriceTable
from kernelevolve.llm.registry import Ensemble
from kernelevolve.operators.base import ParentContext, Proposal, Request
from kernelevolve.operators.tune import params_of
from kernelevolve.platforms.base import Platform
from kernelevolve.platforms.facts import DeviceFacts, device_facts
from kernelevolve.problem.diagnostics import compiler_diagnostics, shorten_line
from kernelevolve.problem.problem import MISSING, Problem, literal, parse, source_hash
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
MAX_UNPRODUCTIVE = 5  # consecutive answers that were known kernels or unusable: stop rather than spin


def fence(text: str) -> str:
    """A Markdown fence longer than any run of backticks in `text`: quoted output cannot close it early."""
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    return "`" * max(3, longest + 1)


def shape_cases_literal(source: str) -> list[dict[str, Any]]:
    """SHAPE_CASES as the problem file writes it; [] where it has none, builds it by code, or does not parse."""
    try:
        cases = literal(parse(source), "SHAPE_CASES")
    except (SyntaxError, ValueError):
        return []
    return list(cases) if isinstance(cases, (list, tuple)) else []


# One angle per draft, in turn: drafts written at the same time then differ even before any has been evaluated.
DRAFT_ANGLES = (
    "the most direct kernel for the operator, written carefully: one pass over the data where the operator allows",
    "a different decomposition of the work than the obvious one: another split across programs or threads "
    "(several rows per program, a split of the reduction dimension, a persistent grid), or another kernel "
    "language that is timed here",
    "a kernel built for the largest shape case first (tiling, vector width, cache blocking), its block sizes "
    "exposed in TUNABLES",
    "the fewest bytes moved and launches made: the whole operator fused into one kernel, each input read once, "
    "intermediates kept in registers or shared memory, each output written once",
)
# What a refine step looks at first when the analysis names nothing more pressing, in turn by call number.
REFINE_FOCUS = (
    "the dominant cost the evaluation and the analysis point to",
    "memory traffic: bytes moved per output, coalesced or contiguous access, vector-width loads and stores",
    "the work decomposition and launch configuration: work per program or thread, grid size against the "
    "device's SMs or cores, occupancy",
    "the shape case with the lowest speedup",
)


def _log_excerpt(result: EvalResult) -> str:
    """A failed evaluation's log for a prompt: the compiler's diagnostics, else its tail with long lines cut."""
    diagnostics = compiler_diagnostics(f"{result.log_tail}\n{result.reason}")
    if diagnostics:
        return diagnostics
    tail = "\n".join(shorten_line(x) for x in result.log_tail.strip().splitlines())
    return tail[-LOG_TAIL_CHARS:]


def policy_on(platform: Platform, options: EvalOptions) -> bool:
    """The kernel policy in force: the run's choice, else the target's default (eval/rules.py)."""
    return options.require_kernel if options.require_kernel is not None else platform.kernel_policy_default()


def _problem_literal(source: str, name: str) -> Any:
    """A problem constant written as a literal; None where it is absent or computed."""
    try:
        value = literal(parse(source), name)
    except (SyntaxError, ValueError):
        return None
    return None if value is MISSING else value


def _dtype(source: str) -> str:
    """The problem's DTYPE as written (`torch.float16` or "float16"); float32 where it sets none."""
    try:
        tree = parse(source)
    except SyntaxError:
        return "float32"
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "DTYPE" for t in node.targets):
            v = node.value
            if isinstance(v, ast.Attribute):
                return v.attr
            if isinstance(v, ast.Constant) and isinstance(v.value, str):
                return v.value
            return ""
    return "float32"


def judging(options: EvalOptions, source: str) -> dict[str, Any]:
    """The correctness rule this run applies to this problem (eval/worker/prepare.criterion_for), and the input
    distributions its trials draw from (prepare._trials: in order, wrapping round)."""
    tolerance = _problem_literal(source, "TOLERANCE")
    if not (isinstance(tolerance, dict) and {"atol", "rtol"} <= set(tolerance)):
        tolerance = None
    computed = tolerance is None and re.search(r"(?m)^TOLERANCE\s*=", source) is not None
    allowed = _problem_literal(source, "INPUT_DISTRIBUTIONS")
    names = [d for d in allowed if d in DISTRIBUTIONS] if isinstance(allowed, (list, tuple)) else []
    names = names or list(DISTRIBUTIONS)
    rule = "tolerance" if tolerance or computed else "measured"
    rule = "kernelbench" if options.correctness == "kernelbench" else rule
    if rule == "kernelbench":
        names = ["given"]
    drawn = list(dict.fromkeys(names[i % len(names)] for i in range(options.trials)))
    rtol = float(tolerance["rtol"]) if tolerance else 0.0
    return {
        "rule": rule,
        "multiple": f"{BUDGET_MULTIPLE:g}",
        "atol": f"{float(tolerance['atol']):g}" if tolerance else "",
        "rtol": f"{rtol:g}" if tolerance else "",
        "norm": f"{max(10 * rtol, 1e-3):g}",
        "trials": options.trials,
        "distributions": [{"name": d, "text": DISTRIBUTIONS[d]} for d in drawn],
        "restricted": allowed is not None,
        "allow_tf32": options.allow_tf32,
        "dtype": _dtype(source),
    }


def tidy(text: str) -> str:
    """A rendered message with runs of blank lines (left by template sections that are off) cut to one; code
    blocks are kept exactly as they are."""
    out: list[str] = []
    fenced = False
    for line in text.strip().splitlines():
        if line.startswith("```"):
            fenced = not fenced
        elif not fenced and not line.strip() and (not out or not out[-1].strip()):
            continue
        out.append(line.rstrip() if not fenced else line)
    return "\n".join(out)


def timed_languages(platform: Platform) -> list[str]:
    return [lang for lang in platform.languages if lang != "pytorch" and lang not in platform.interpreted]


def _sm(facts: DeviceFacts) -> str:
    return facts.capability.replace(".", "") if facts.capability else ""


class UniversalOperator:
    name = "llm"
    # What every prompt states about the run: its evaluation options (correctness rule, trials, TF32, kernel
    # policy) and the target's facts (None: gathered on this machine at the first prompt). The session sets both.
    options: EvalOptions = EvalOptions()
    facts: DeviceFacts | None = None

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
        self.unproductive = 0  # consecutive answers with nothing to evaluate (duplicates, unusable)
        self.last_unproductive = ""
        self.call_prefix = f"{problem.name}-"  # the session sets `<problem>-<run>-`: call names unique per run

    def messages(
        self,
        parent: ParentContext | None,
        *,
        draft_index: int = 1,
        directives: list[str] | None = None,
        knowledge: list[str] | None = None,
        drafts: list[dict[str, Any]] | None = None,
        seq: int = 0,
    ) -> list[Message]:
        """The system and user messages of one step; `drafts`: the run's earlier drafts (a draft step), `seq`: the
        call's number in the run (it picks a refine step's focus, so calls in flight on one parent differ)."""
        facts = self.facts or device_facts(self.platform.name)
        languages = ", ".join(lang for lang in self.platform.languages if lang != "pytorch")
        note = self.platform.note
        if self.platform.interpreted:
            note = (note + " " if note else "") + "Only C++ kernels are timed here; prefer them."
        shown = self._parent(parent)
        context = {
            "languages": languages,
            "platform": {
                "name": self.platform.name,
                "device": self.platform.device_type,
                "languages": languages,
                "timed": ", ".join(timed_languages(self.platform)),
                "note": note,
                "facts": facts.describe(),
            },
            "judging": judging(self.options, self.problem.source),
            "policy": {
                "on": policy_on(self.platform, self.options),
                "default": self.options.require_kernel is None,
                "gpu": self.platform.separate_device(),
            },
            "build": {
                "cxx": facts.versions.get("cxx", ""),
                "sm": _sm(facts),
                "cuda": "cuda" in self.platform.languages,
                "cpu": not self.platform.separate_device(),
            },
            "baseline": self.options.baseline,
            "problem": {
                "name": self.problem.name,
                "source": self.problem.source.strip(),
                "cases": shape_cases_literal(self.problem.source),
                "computed_cases": re.search(r"(?m)^SHAPE_CASES\s*=", self.problem.source) is not None,
            },
            "parent": shown,
            "lineage": parent.lineage if parent else [],
            "draft_index": draft_index,
            "drafts": drafts or [],
            "draft_angle": DRAFT_ANGLES[(draft_index - 1) % len(DRAFT_ANGLES)],
            "focus": REFINE_FOCUS[seq % len(REFINE_FOCUS)] if shown and not shown["failed"] else "",
            "directives": directives or [],
            "knowledge": knowledge or [],
            "budget_multiple": f"{BUDGET_MULTIPLE:g}",
        }
        return [
            Message("system", tidy(TEMPLATES.get_template("system.j2").render(**context))),
            Message("user", tidy(TEMPLATES.get_template("user.j2").render(**context))),
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
            "failed": failed,
            "fitness": r.fitness if r else None,
            "baseline": r.baseline if r else "eager",
            "reason": "\n".join(shorten_line(x) for x in r.reason.splitlines()) if r else "",
            "cases": cases,
            "log_tail": (log := _log_excerpt(r) if failed else ""),
            "log_fence": fence(log),
            "children": parent.children,
        }

    def messages_for(self, request: Request) -> list[Message]:
        return self.messages(
            request.parent,
            draft_index=request.draft_index,
            directives=request.context.directives,
            knowledge=request.context.knowledge,
            drafts=request.context.drafts,
            seq=request.seq,
        )

    def call_name(self, seq: int) -> str:
        """The name of the run's call `seq`, the same in every session: deferred clients key on it."""
        return f"{self.call_prefix}{seq:03d}"

    def propose(self, request: Request) -> Proposal:
        """One step. Never raises for a bad response or an unreachable model: the failure is in the proposal."""
        parent = request.parent
        messages = self.messages_for(request)
        arm = self.ensemble.choose()
        parents = request.parents[:1] if parent else []
        if self.agent_budget > 0:
            prompt, response, source, error = self._agent_step(arm, messages, parent)
            return self._proposal(request.seq, parents, parent, arm, prompt, response, source, error, request.island)
        prompt, response, error = render(messages), None, ""
        try:
            response = arm.client.complete(
                messages, max_tokens=self.max_tokens, temperature=self.temperature, name=self.call_name(request.seq)
            )
        except LLMPending as e:  # stored as pending: a later session serves its answer
            call = LLMCallRecord(request.seq, arm.client.name, parents, prompt, "", outcome="pending")
            return Proposal("llm" if parent else "llm-draft", parents, call=call, pending=e.where, note=str(e))
        except LLMError as e:
            error = str(e)
        source, error = self._parsed(response, parent, error)
        return self._proposal(request.seq, parents, parent, arm, prompt, response, source, error, request.island)

    def where(self, seq: int) -> str:
        """Where call `seq` waits for its answer (the first deferred client's word for it)."""
        client = next((a.client for a in self.ensemble.arms if a.client.deferred), None)
        return client.where(self.call_name(seq)) if client is not None else ""

    def resume(self, call: dict[str, Any], parent_source: str | None) -> Proposal | None:
        """A pending call of an earlier session, answered now (its prompt as it was sent), or None while its
        answer has not come."""
        arm = next((a for a in self.ensemble.arms if a.client.name == call["model"]), None)
        if arm is None or not arm.client.deferred:
            why = (
                f"call {self.call_name(call['seq'])} waits for {call['model']}, which this session's --llm does not "
                "name: give the same --llm as the session that made it"
            )
            return Proposal("llm", [], stop=why)
        try:
            response = arm.client.collect(self.call_name(call["seq"]))
        except LLMError as e:
            response, error = None, str(e)
        else:
            if response is None:
                return None
            error = ""
        parents = list(call["parents"])
        parent = ParentContext(parents[0], "", parent_source or "", None) if parents else None
        source, error = self._parsed(response, parent, error)
        proposal = self._proposal(call["seq"], parents, parent, arm, call["prompt"], response, source, error, 0)
        proposal.knowledge = list(call.get("knowledge") or [])
        return proposal

    def _parsed(self, response: LLMResponse | None, parent: ParentContext | None, error: str) -> tuple[str | None, str]:
        """The kernel an answer gives (priced on the way), or why there is none: (source, error)."""
        from kernelevolve.operators.edits import EditError, apply_response

        if response is None:
            return None, error
        response.cost = self.prices.cost(response.model, response.prompt_tokens, response.completion_tokens)
        try:
            return apply_response(response.text, parent.source if parent else None)[0], error
        except EditError as e:
            return None, f"unusable response: {e}"

    def _proposal(
        self,
        seq: int,
        parents: list[int],
        parent: ParentContext | None,
        arm: Any,
        prompt: str,
        response: LLMResponse | None,
        source: str | None,
        error: str,
        island: int,
    ) -> Proposal:
        from kernelevolve.operators.edits import strategy_of

        operator = "llm" if parent else "llm-draft"
        call = LLMCallRecord(
            seq=seq,
            model=response.model if response else arm.client.name,
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
            self._unproductive(f"unusable ({error[:80]})")
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
            island,
            call=call,
            strategy=strategy_of(response.text),
            meta={"arm": arm},
        )

    def _unproductive(self, what: str) -> None:
        self.unproductive += 1
        self.last_unproductive = what

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
            self._unproductive("a known kernel")
        elif proposal.result is None:  # evaluated (an unusable answer was debited when it came)
            self.ensemble.record(arm, proposal.call.cost, result.correct)
            self.unproductive = 0

    def stop_reason(self) -> str:
        if self.failures >= MAX_LLM_FAILURES:
            return f"the LLM failed {self.failures} times in a row: {self.last_error}"
        if self.unproductive >= MAX_UNPRODUCTIVE:
            return (
                f"the model's last {self.unproductive} answers gave nothing to evaluate (known kernels or unusable "
                f"answers; the last: {self.last_unproductive})"
            )
        return ""
