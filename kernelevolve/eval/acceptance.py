"""What the parent checks before it accepts a worker's result (torch-free).

The worker's process also runs the candidate, so a result line on its events pipe is only as trustworthy as that
process. The parent therefore checks what it can from outside:
- exactly one result per job: after a result the pipe is read to its end (the worker exits right after its
  result), and again after the kill, so a second result (one the candidate wrote before or after the harness's
  own) rejects the evaluation;
- the result is about the job it was given: the problem's and the candidate's hashes, the target, and a baseline
  that is the job's or the eager fallback;
- speedup and fitness are recomputed here from the raw per-case times, and must agree with what was sent (a case
  that failed after it was timed has no speedup).

These do not make a forgery impossible (a candidate that writes a whole consistent result and exits first is
not caught here: that needs the judge in a process of its own), but they make every inconsistent one visible.
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
        base = case.t_compile_ms if result.baseline == "compile" else case.t_eager_ms
        expected = base / case.t_candidate_ms if base and case.t_candidate_ms else None
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
