"""Test doubles for the driver's ports (search/ports.py): an evaluator that scores a source by a rule, and an
operator that answers from a script. With them a search runs in-process in milliseconds: no worker, no build."""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from pathlib import Path

from kernelevolve.eval import environment
from kernelevolve.eval.wire import EvalOptions
from kernelevolve.operators.base import Proposal, Request
from kernelevolve.operators.tune import params_of
from kernelevolve.platforms import get_platform
from kernelevolve.problem.problem import Problem, source_hash
from kernelevolve.result import CaseResult, EvalResult, Status


def tile_rule(source: str) -> float:
    """Fitness from the source's TILE constant: best at 32, falling off by powers of two either side."""
    m = re.search(r"^TILE = (\d+)$", source, re.M)
    tile = int(m.group(1)) if m else 1
    return 2.0 / (1 + abs(tile.bit_length() - 6))


class RuleEvaluator:
    """Results from a rule over the candidate's source. A source containing a key of `statuses` gets that status
    (compile errors, timeouts); `delay_s` makes each evaluation take that long (to kill a run mid-way)."""

    def __init__(
        self,
        rule: Callable[[str], float] = tile_rule,
        *,
        target: str = "cpu",
        statuses: dict[str, Status] | None = None,
        delay_s: float = 0.0,
        short: dict[str, int] | None = None,
        busy: dict[str, int] | None = None,
    ):
        """short: a source containing a key is `harness_limit` (the machine short) that many times, then judged;
        busy: likewise `inconclusive` (a timing check failed on a contended host)."""
        self.platform = get_platform(target)
        self.rule = rule
        self.short = dict(short or {})
        self.busy = dict(busy or {})
        self.statuses = statuses or {}
        self.delay_s = delay_s
        self.evaluated: list[str] = []  # the sources, in order
        self.options: list[EvalOptions] = []
        self.prebuilt: list[str] = []  # the sources whose extensions were built beside an evaluation

    def evaluate(self, problem: Problem, candidate: Path, options: EvalOptions | None = None, /, **kw) -> EvalResult:
        source = Path(candidate).read_text()
        self.evaluated.append(source)
        self.options.append(options or EvalOptions(**kw))
        time.sleep(self.delay_s)
        for counts, status in ((self.short, Status.HARNESS_LIMIT), (self.busy, Status.INCONCLUSIVE)):
            for marker, left in counts.items():
                if marker in source and left > 0:
                    counts[marker] = left - 1
                    return self._failed(status, marker)
        for marker, status in self.statuses.items():
            if marker in source:
                return self._failed(status, marker)
        fitness = self.rule(source)
        case = CaseResult(shape={"N": 8}, correct=True, speedup=fitness, t_candidate_ms=1.0 / fitness, t_eager_ms=1.0)
        env = environment.current(self.platform.name)  # judged here and now, as a worker's result says
        return EvalResult(
            status=Status.OK, correct=True, cases=[case], target=self.platform.name, versions=env, device=env["device"]
        ).finalize()

    def _failed(self, status: Status, marker: str) -> EvalResult:
        env = environment.current(self.platform.name)
        return EvalResult(
            status=status,
            correct=False,
            reason=f"scripted {status.value}: {marker}",
            versions=env,
            device=env["device"],
        ).finalize()

    def prebuild(self, problem: Problem, candidate: Path) -> EvalResult:
        self.prebuilt.append(Path(candidate).read_text())
        return EvalResult(status=Status.OK, correct=False, reason="built only: not evaluated").finalize()

    def close(self) -> None:
        pass


class ScriptedOperator:
    """An operator that answers each request with the next item of its script: a source, or a function of the
    request returning one (None: no candidate). Records the requests and the feedback it got."""

    def __init__(self, script: list[str | Callable[[Request], str | None]], *, name: str = "llm", cost: float = 0.0):
        self.name = name
        self.script = list(script)
        self.cost_per_call = cost
        self.cost = 0.0
        self.requests: list[Request] = []
        self.feedback_got: list[tuple[Proposal, EvalResult | None]] = []

    def propose(self, request: Request) -> Proposal:
        self.requests.append(request)
        self.cost += self.cost_per_call
        operator = "llm" if request.parents else "llm-draft"
        parents = request.parents[:1]
        if not self.script:
            return Proposal(operator, parents, note="script exhausted")
        item = self.script.pop(0)
        source = item(request) if callable(item) else item
        if source is None:
            return Proposal(operator, parents, note="scripted: no candidate")
        return Proposal(operator, parents, source, source_hash(source), params_of(source), request.island)

    def feedback(self, proposal: Proposal, result: EvalResult | None) -> None:
        self.feedback_got.append((proposal, result))

    def stop_reason(self) -> str:
        return "" if self.script else "the script is exhausted"


def kernel(tile: int, extra: str = "", width: int | None = None, tunable: bool = True) -> str:
    """A small kernel source with a TILE tunable (what tile_rule scores), and a WIDTH one if given (which it
    does not: a larger space of equally fit kernels); tunable=False: TILE is a plain constant."""
    tunables = "{'TILE': [1, 2, 4, 8, 16, 32, 64, 128]" + (", 'WIDTH': [1, 2, 4, 8]}" if width else "}")
    if not tunable:
        tunables = "{}"
    widths = f"WIDTH = {width}\n" if width else ""
    return (
        f"import torch.nn as nn\n\nTILE = {tile}\n{widths}TUNABLES = {tunables}\n{extra}\n\n"
        "class ModelNew(nn.Module):\n    def forward(self, x):\n        return x.t().contiguous()\n"
    )
