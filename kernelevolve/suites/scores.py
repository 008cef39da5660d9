"""BackendBench's scores of a suite's rows, beside KernelBench's fast_p (docs/cli.md "bench").

A row is one operator (a problem); its samples are its shape cases, each correct or not and timed against eager
and, where timed, torch.compile. An operator that failed before any case counts as one failed sample.
- correctness: per operator, the share of its samples that passed;
- geomean speedup: over operators, the geometric mean of each one's speedup, an operator without a correct kernel
  counted as 1.0 (ATen keeps serving it); over eager and over the faster of eager and torch.compile per case;
- perf@p: the share of all timed samples that are correct and more than p times faster than the baseline (a
  problem's CHECK_CASES are samples of correctness only);
- pass rate: the share of operators with a correct kernel.
"""

from __future__ import annotations

import math
from typing import Any, Protocol

PERF_AT = (1.0, 1.2, 1.5, 2.0)
BASELINES = (("speedup_eager", "eager"), ("speedup_best", "the faster of eager and torch.compile"))


class Row(Protocol):
    name: str
    correct: bool
    cases: list[dict[str, Any]]
    speedup_eager: float | None
    speedup_best: float | None


def best_of(t_kernel: float | None, t_eager: float | None, t_compile: float | None) -> float | None:
    """A case's speedup over the faster of eager and torch.compile (eager alone where compile was not timed)."""
    base = min(t for t in (t_eager, t_compile) if t) if t_eager or t_compile else None
    return base / t_kernel if base and t_kernel else None


def correctness(row: Row) -> float:
    """The share of the row's samples that passed (0.0 for a row that failed before any)."""
    return sum(bool(c.get("correct")) for c in row.cases) / len(row.cases) if row.cases else 0.0


def geomean_speedup(rows: list[Row], key: str = "speedup_eager") -> float | None:
    """Geometric mean over operators of their speedup; 1.0 for one without a correct, timed kernel."""
    if not rows:
        return None
    values = [(getattr(r, key) or 1.0) if r.correct else 1.0 for r in rows]
    return math.exp(sum(math.log(v) for v in values) / len(values))


def perf_at(rows: list[Row], p: float, key: str = "speedup_eager") -> float:
    """The share of all timed samples that are correct and more than p times faster than the baseline."""
    samples = [c for r in rows for c in (r.cases or [{}]) if c.get("timed", True)]
    if not samples:
        return 0.0
    return sum(1 for c in samples if c.get("correct") and (c.get(key) or 0.0) > p) / len(samples)


def pass_rate(rows: list[Row]) -> float:
    return sum(r.correct for r in rows) / len(rows) if rows else 0.0


def scores(rows: list[Row]) -> dict[str, Any]:
    """Every score, for results.json."""
    return {
        "operators": len(rows),
        "pass_rate": pass_rate(rows),
        "correctness": {r.name: correctness(r) for r in rows},
        "geomean_speedup": {label: geomean_speedup(rows, key) for key, label in BASELINES},
        "perf_at": {label: {str(p): perf_at(rows, p, key) for p in PERF_AT} for key, label in BASELINES},
    }


def markdown(rows: list[Row]) -> list[str]:
    """The scores' lines under a suite's table."""
    if not rows:
        return []
    lines = [
        "",
        f"BackendBench's scores: pass rate {pass_rate(rows):.2f} ({sum(r.correct for r in rows)} of {len(rows)} "
        "operators with a correct kernel); an operator without one counts as 1.0x in the geometric means.",
        "",
        "| baseline | geomean speedup | " + " | ".join(f"perf@{p:g}" for p in PERF_AT) + " |",
        "| --- " * (2 + len(PERF_AT)) + "|",
    ]
    for key, label in BASELINES:
        mean = geomean_speedup(rows, key)
        cells = " | ".join(f"{perf_at(rows, p, key):.2f}" for p in PERF_AT)
        lines.append(f"| {label} | {mean:.2f}x | {cells} |")
    lines += ["", "Correctness per operator (share of its samples passed): " + ", ".join(
        f"{r.name} {correctness(r):.2f}" for r in rows
    )]  # fmt: skip
    return lines
