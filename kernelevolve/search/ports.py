"""What the driver needs from the parts it drives: an evaluator and operators. Each is a protocol, so a search
can run on test doubles (tests/doubles.py) as it runs on the harness and a model."""

from __future__ import annotations

from pathlib import Path
from typing import Protocol, runtime_checkable

from kernelevolve.eval.wire import EvalOptions
from kernelevolve.operators.base import Proposal, Request
from kernelevolve.platforms.base import Platform
from kernelevolve.problem.problem import Problem
from kernelevolve.result import EvalResult


class Evaluate(Protocol):
    """One device's evaluator (eval/evaluator.py's `Evaluator`), or one lane of a pool shared by several searches
    (eval/service/pool.py's `Lane`): the driver runs one evaluation on each at a time. A lane also has `queued_s()`,
    the seconds its search waited for a device, which the search's time budget does not count."""

    platform: Platform

    def evaluate(self, problem: Problem, candidate: Path, options: EvalOptions, /) -> EvalResult: ...

    def prebuild(self, problem: Problem, candidate: Path) -> EvalResult:
        """Build the candidate's extensions beside a running evaluation (the driver does so on GPU targets)."""

    def close(self) -> None: ...


class Propose(Protocol):
    """An operator (the universal LLM operator, the tune operator, replay): a candidate for a request, then the
    evaluation back as feedback. It keeps its own accounting: `cost` (USD this session) and `stop_reason`."""

    name: str
    cost: float

    def propose(self, request: Request) -> Proposal: ...

    def feedback(self, proposal: Proposal, result: EvalResult | None) -> None:
        """result None: the driver found the candidate already known and did not evaluate it."""

    def stop_reason(self) -> str:
        """Why this operator can propose nothing more ("" while it can)."""


@runtime_checkable
class Steer(Protocol):
    """An operator that chooses its own parents (replay follows the recorded run's): the driver asks it instead
    of the strategy, and runs its steps one at a time, since a later step's parent is an earlier step's node."""

    def next_parents(self, by_hash: dict[str, int]) -> list[int] | None:
        """The next step's parents ([] for a draft; None: nothing left), given the run's nodes by source hash."""


@runtime_checkable
class Defer(Protocol):
    """An operator whose model may answer in a later session (inbox, batch): a proposal with `pending` set is stored
    as a waiting call, and a later session asks for its answer."""

    def resume(self, call: dict, parent_source: str | None, /) -> Proposal | None:
        """The waiting call's proposal, built from its recorded prompt and the answer that came; None while it has
        none; a proposal with `stop` set when this session cannot serve it."""

    def where(self, seq: int, /) -> str:
        """Where call `seq` waits for its answer, for the line that says what to do."""
