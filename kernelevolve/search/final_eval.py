"""The torch.compile baseline during a search, and after it.

Compiling and checking the baseline costs 5-15 s in every evaluation on a GPU (docs/benchmarks/harness.md), and
a search whose fitness is measured against eager gains nothing from it. Such a search therefore runs without it,
and its best kernel is evaluated once more, with it, at the end: one compile instead of one per node.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from kernelevolve.problem.problem import Problem
from kernelevolve.result import EvalResult


def compile_in_search(baseline: str, compile_baseline: bool | None) -> bool | None:
    """The evaluator's compile_baseline for the search's nodes: needed only when fitness is measured against it."""
    return compile_baseline if baseline == "compile" else False


def with_compile_baseline(
    evaluator: Any, problem: Problem, kernel: Path, *, trials: int, baseline: str, compile_baseline: bool | None
) -> EvalResult | None:
    """The best kernel evaluated with the torch.compile baseline; None where the search already had it, the user
    turned it off, or the target never times it."""
    if compile_in_search(baseline, compile_baseline) is not False or compile_baseline is False:
        return None
    if not evaluator.platform.compile_baseline:
        return None
    return evaluator.evaluate(problem, kernel, trials=trials, baseline=baseline)
