"""Is a problem able to tell a real kernel from a trivial answer? Trivial-solution probes go through the real
harness (torch-free here, like the evaluator): all zeros, a copy of the first input (when its shape and dtype
match the output's), a constant equal to the reference's mean. A probe that passes means the problem's
outputs or tolerances cannot tell it from a kernel. A fourth probe, the reference itself, must pass: when it
does not, the reference is not deterministic (random ops, dropout with training forced on). And outputs whose
magnitude is below the absolute tolerance are flagged: every elementwise test passes a zero there.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from kernelevolve.eval.evaluator import Evaluator
from kernelevolve.problem.problem import Problem
from kernelevolve.result import EvalResult, Status

NOT_APPLICABLE = "probe not applicable"

_HEADER = '''"""KernelEvolve check-problem probe: {name}."""

import types

import torch
from torch.utils._pytree import tree_map

_problem = types.ModuleType("kernelevolve_probe_problem")
_problem.__file__ = {path!r}
with open({path!r}) as _f:
    exec(compile(_f.read(), {path!r}, "exec"), _problem.__dict__)


class ModelNew(_problem.Model):
    def forward(self, *args):
        out = super().forward(*args)
'''

_BODIES = {
    "zeros": "        return tree_map(lambda t: torch.zeros_like(t) if isinstance(t, torch.Tensor) else t, out)\n",
    "first_input": (
        "        x = args[0] if args else None\n"
        "        if not (isinstance(out, torch.Tensor) and isinstance(x, torch.Tensor)\n"
        "                and x.shape == out.shape and x.dtype == out.dtype):\n"
        f"            raise RuntimeError({NOT_APPLICABLE!r})\n"
        "        return x.clone()\n"
    ),
    "mean": (
        "        def const(t):\n"
        "            if not isinstance(t, torch.Tensor) or t.numel() == 0:\n"
        "                return t\n"
        "            m = t.double().mean()\n"
        "            return torch.full_like(t, float(m) if t.is_floating_point() else int(m.round()))\n"
        "        return tree_map(const, out)\n"
    ),
    "reference": "        return out\n",
}
TRIVIAL = ("zeros", "first_input", "mean")


@dataclass
class Probe:
    name: str
    status: str
    reason: str

    @property
    def passed(self) -> bool:
        return self.status == Status.OK.value

    @property
    def applicable(self) -> bool:
        return NOT_APPLICABLE not in self.reason


@dataclass
class Soundness:
    probes: list[Probe] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    @property
    def passing(self) -> list[Probe]:
        """Trivial probes the problem accepts: each one a hole."""
        return [p for p in self.probes if p.name in TRIVIAL and p.passed]

    @property
    def sound(self) -> bool:
        return not self.passing and not self.warnings


def probe_source(name: str, problem_path: Path) -> str:
    return _HEADER.format(name=name, path=str(problem_path)) + _BODIES[name]


def check_problem(
    problem: Problem, target: str, *, timeout_s: float = 300.0, trials: int = 2, jobs: int | None = None
) -> Soundness:
    """Run every probe through the harness (correctness only, kernel policy off), `jobs` workers at a time
    (nothing is timed, so they may share the machine). Raises ProblemError for a malformed problem."""
    names = (*TRIVIAL, "reference")
    with tempfile.TemporaryDirectory(prefix="kernelevolve-probe-") as tmp:

        def run(name: str) -> EvalResult:
            path = Path(tmp) / f"probe_{name}.py"
            path.write_text(probe_source(name, problem.path))
            with Evaluator(target, timeout_s=timeout_s) as ev:
                return ev.evaluate(problem, path, trials=trials, timed=False, require_kernel=False)

        workers = jobs or min(len(names), os.cpu_count() or 1)
        pool = ThreadPoolExecutor(max_workers=workers)
        try:  # the reference probe first: a malformed problem fails there without waiting for the others
            futures = {name: pool.submit(run, name) for name in reversed(names)}
            results = {name: futures[name].result() for name in reversed(names)}
        finally:
            pool.shutdown(wait=True, cancel_futures=True)
    results = {name: results[name] for name in names}
    report = Soundness([Probe(n, r.status.value, r.reason) for n, r in results.items()])
    ref = results["reference"]
    if ref.status is not Status.OK:
        report.warnings.append(
            f"the reference itself fails the harness ({ref.status.value}: {ref.reason}): is it deterministic "
            "(random ops, dropout or batch statistics with training forced on)?"
        )
    report.warnings += _tiny_outputs(results.values())
    return report


def _tiny_outputs(results: Iterable[EvalResult]) -> list[str]:
    out = []
    seen: set[str] = set()
    for result in results:
        for case in result.cases:
            key = repr(case.shape)
            fixed = case.accuracy.rule.startswith("the problem's TOLERANCE") or "judged by the fixed tolerance" in (
                case.reason or ""
            )  # the measured rule scales with the outputs: tiny ones are judged as well as any
            largest, atol = case.accuracy.ref_max_abs, case.accuracy.atol
            if key in seen or largest is None or atol is None or not fixed:
                continue
            seen.add(key)
            if largest < atol:
                out.append(
                    f"case {case.shape}: every reference output is below the tolerance (max |ref| = "
                    f"{largest:.3g} < atol {atol:g}): scale the outputs or lower atol"
                )
    return out
