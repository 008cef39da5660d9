"""What the parent checks before it accepts a worker's result (torch-free): exactly one result per job, the job's
hashes, target and baseline, and speedup and fitness recomputed from the raw per-case times.

The worker's process may also run the candidate, so its result line is only as trustworthy as that process: these
checks make every inconsistent forgery visible, not every forgery. What they do not catch: docs/harness.md
("Limits"); where they run in an evaluation: docs/architecture.md ("Evaluating one candidate").
"""

from __future__ import annotations

import math

from kernelevolve.eval.wire import EvalJob
from kernelevolve.result import EvalResult, Status

REJECTED_PREFIX = "the parent's check of the worker's result"


def mismatches(result: EvalResult, job: EvalJob, problem_hash: str, candidate_hash: str) -> list[str]:
    """What in the result disagrees with the job or with its own raw times ([] when nothing does)."""
    found = []
    if result.target and result.target != job.target:
        found.append(f"it names target {result.target!r}, the job {job.target!r}")
    for what, sent, own in (
        ("problem", result.problem_hash, problem_hash),
        ("candidate", result.candidate_hash, candidate_hash),
    ):
        if (sent or result.status is Status.OK) and sent != own:
            found.append(f"its {what} hash {sent or '(none)'} is not the {what} the job names ({own})")
    if result.baseline not in ("eager", job.baseline):
        found.append(f"it was timed against {result.baseline!r}, the job asked for {job.baseline!r}")
    for i, case in enumerate(result.cases):
        base, t = (
            case.timing.of("compile" if result.baseline == "compile" else "eager").median_ms,
            case.timing.candidate.median_ms,
        )
        expected = base / t if base and t else None
        if case.speedup is not None and not _same(case.speedup, expected):  # None: a case failed after timing
            found.append(f"case {i}'s speedup {case.speedup} is not its times' {expected}")
    sent = (result.correct, result.speedup, result.fitness)
    again = result.model_copy(deep=True).finalize()
    if sent[0] != again.correct or not _same(sent[1], again.speedup) or not _same(sent[2], again.fitness):
        found.append(f"its speedup and fitness {sent[1:]} are not its cases' {(again.speedup, again.fitness)}")
    return found


def _same(a: float | None, b: float | None) -> bool:
    if a is None or b is None:
        return a is None and b is None
    return math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-12)


def reject(result: EvalResult, why: str) -> EvalResult:
    """The result, rejected for `why`; its measurements stay for a person to look at, its fitness is zero."""
    result.status = Status.REJECTED
    result.reason = f"{REJECTED_PREFIX}: {why}: a forged or corrupted result"
    for case in result.cases:
        case.speedup = case.speedup_graph = None
    return result.finalize()
