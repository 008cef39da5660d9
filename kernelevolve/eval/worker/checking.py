"""Phase B correctness for one shape case: every trial run through the checks a hostile candidate must pass.

Per trial: poisoned memory around the call; the first trial runs the candidate before the reference
(re-run after it, and the output must not share its memory), later trials after a reference run whose output
is dropped (stale memory then holds the answer); output structure and aliasing; inputs unchanged; the
comparison. The first trial is repeated on fresh buffers holding the same values (determinism), under the
launch monitor when the kernel policy is on. Threads are checked after every call.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, field
from typing import Any

import torch

from kernelevolve.eval.worker import memory, trees
from kernelevolve.eval.worker.correctness import (
    KERNELBENCH,
    Comparison,
    Criterion,
    compare,
    inputs_unchanged,
    snapshot,
)
from kernelevolve.eval.worker.outputs import Span, aliased, not_plain, spans
from kernelevolve.eval.worker.poison import poisoned_elements
from kernelevolve.eval.worker.prepare import PreparedCase, Trial, describe, sync
from kernelevolve.platforms import accelerator
from kernelevolve.result import CaseResult, Status


class CandidateFailure(Exception):
    def __init__(self, status: Status, reason: str):
        super().__init__(reason)
        self.status = status
        self.reason = reason


def failure_of(e: BaseException, what: str) -> CandidateFailure:
    """The failure an exception raised in the candidate's code stands for: `what` and the exception, classified; an
    out-of-memory error that the candidate's own demand does not explain is the harness's limit, never the
    candidate's failure (memory.candidate_short)."""
    reason = f"{what} {describe(e)}"
    device = accelerator() if isinstance(e, torch.OutOfMemoryError) else None
    if device is not None:
        short = memory.candidate_short(e, device)
        if short:
            return CandidateFailure(Status.HARNESS_LIMIT, f"{short} ({reason})")
    return CandidateFailure(classify(e), reason)


def classify(e: BaseException) -> Status:
    """Compile errors raised lazily (Triton JIT at first launch, extension builds) vs runtime errors."""
    kind = f"{type(e).__module__}.{type(e).__name__}"
    text = str(e)
    if kind.startswith("triton.") and ("Compil" in kind or "OutOfResources" in kind):
        return Status.COMPILE_ERROR
    if "Error building extension" in text or "ninja" in text and "error" in text.lower():
        return Status.COMPILE_ERROR
    return Status.RUNTIME_ERROR


@dataclass
class Guard:
    """What the checks of phase B hold: taken before the candidate loaded."""

    device: torch.device
    dtype: torch.dtype
    host: Any  # eval/worker/host.py: where the candidate runs (InProcess or Remote)
    protected: list[Span]  # every input buffer and reference output the harness holds
    candidate_path: str
    require_kernel: bool
    checks: list[str] = field(default_factory=list)  # the result's list: names of the checks run, in order
    review: list[str] = field(default_factory=list)  # the result's list: notes for a person to review
    clock: Any = None  # prepare.LoadClock: the timing stage's seconds by part

    def ran(self, *names: str) -> None:
        self.checks.extend(n for n in names if n not in self.checks)

    def part(self, name: str) -> Any:
        """The timing stage's clock for one part (a no-op where the guard has none)."""
        return self.clock.part(name) if self.clock is not None else contextlib.nullcontext()


def protected_spans(cases: list[PreparedCase]) -> list[Span]:
    out: list[Span] = []
    for pc in cases:
        for trial in pc.trials:
            out += spans(trial.inputs, "a harness input buffer") + spans([trial.reference], "a reference output")
        for inputs in pc.timing_sets + pc.unseen_sets:
            out += spans(inputs, "a harness input buffer")
        out += spans(pc.timing_refs, "a reference output") + spans(pc.unseen_refs, "a reference output")
    return out


def check_case(pc: PreparedCase, key: int, g: Guard, cr: CaseResult) -> tuple[Any, Comparison, float]:
    """Every trial of one case; returns the model (its handle, where the candidate has a process of its own), the
    merged verdict and the seconds of the first call (which includes JIT compilation). Raises CandidateFailure for
    a rejection or a failed call. KernelBench's own verdict on the given inputs goes to `cr` as soon as it is
    known."""
    model = g.host.model(key, pc, pc.dtype)
    verdict = Comparison(True)
    first_call_s = 0.0
    for i, trial in enumerate(pc.trials):
        with memory.resident(trial, g.device):
            if i > 0:
                _reference_first(pc, trial.inputs, g)
            out, seconds, _ = call_checked(model, trial.inputs, pc, g)
            if i == 0:
                first_call_s = seconds
                _reference_after(pc, trial.inputs, out, g)
            cmp = explain(pc.judge(out, trial), out, f"{trial.distribution} inputs")
            if trial.distribution == "given":
                kb = cmp.ok if pc.criterion.rule == "kernelbench" else KERNELBENCH.check(out, trial.reference).ok
                cr.accuracy.kernelbench_correct = kb and cr.accuracy.kernelbench_correct is not False
            if cmp.ok and i == 0:
                cmp = cmp.merge(_deterministic(model, trial, out, pc, g))
            del out
        verdict = verdict.merge(cmp)
        if not verdict.ok:
            break  # the case is decided; its first failure is the reason
    busy = g.host.threads(native_only=True)
    if busy:
        raise CandidateFailure(Status.REJECTED, f"threads check: after forward returned, {busy}")
    return model, verdict, first_call_s


def call_checked(
    model: Any, inputs: list[Any], pc: PreparedCase, g: Guard, monitor: bool = False
) -> tuple[Any, float, list[str] | None]:
    """One forward call in poisoned memory (where the candidate runs), then the checks every call must pass before
    its output is compared: no thread left running, a plain output, the inputs unchanged, no memory shared with
    them. Returns (output, seconds, the candidate kernels the launch monitor saw, with monitor)."""
    before = snapshot(inputs)
    out, seconds, seen, alias = g.host.call(model, inputs, pc, monitor)
    g.ran("uninitialised_memory", "threads", "structure", "inputs_unchanged", "aliasing")
    changed = inputs_unchanged(inputs, before)
    if changed:
        raise CandidateFailure(Status.INCORRECT, f"inputs check: {changed}")
    if alias:  # seen where the candidate runs: the output here is the judge's copy
        raise CandidateFailure(Status.REJECTED, f"aliasing check: {alias}")
    check_output(out, inputs, pc, g)
    return out, seconds, seen


def check_output(out: Any, inputs: list[Any], pc: PreparedCase, g: Guard) -> None:
    why = not_plain(out)
    if why:
        raise CandidateFailure(Status.REJECTED, f"structure check: {why}")
    if not pc.ref_aliases_input and g.host.in_process:  # else the output is the judge's copy
        alias = aliased(out, spans(inputs, "input {i}") + g.protected)
        if alias:
            raise CandidateFailure(Status.REJECTED, f"aliasing check: {alias}")


def explain(cmp: Comparison, out: Any, label: str) -> Comparison:
    """The comparator's verdict `cmp` on `out`, its reason naming the check: an output still holding the poison
    pattern was (partly) never written."""
    if cmp.ok:
        return cmp
    # The poison reads as ~3.4e38 (float32, bfloat16) or NaN (float16): scan only when the error says so.
    suspicious = not cmp.max_abs_err < 1e30
    leaves = trees.tensors(out) if suspicious else []
    unwritten = sum(poisoned_elements(x) for x in leaves)
    if unwritten:
        cmp.reason = (
            f"uninitialised-memory check: {label}: {unwritten} output elements still hold the poison pattern "
            f"(memory the candidate never wrote); {cmp.reason}"
        )
    else:
        cmp.reason = f"correctness check: {label}: {cmp.reason}"
    return cmp


def _reference_first(pc: PreparedCase, inputs: list[Any], g: Guard) -> None:
    """The reference runs on these inputs and its output is freed: without poisoning, an output the candidate
    allocates but never writes would now hold the right answer."""
    with torch.no_grad():
        out = pc.ref_model(*inputs)
    sync(g.device)
    del out
    g.ran("order")


def _reference_after(pc: PreparedCase, inputs: list[Any], out: Any, g: Guard) -> None:
    """Candidate first, reference after: an output in memory the allocator considers free would be
    overwritten by the reference's result, and then pass the comparison."""
    with torch.no_grad():
        after = pc.ref_model(*inputs)
    sync(g.device)
    alias = aliased(out, spans([after], "the reference output computed after it"))
    g.ran("order")
    if alias and not pc.ref_aliases_input:
        raise CandidateFailure(Status.REJECTED, f"aliasing check: {alias}")


def _deterministic(model: torch.nn.Module, trial: Trial, out: Any, pc: PreparedCase, g: Guard) -> Comparison:
    """The first trial again, reference first, on fresh buffers holding the same values. The results must
    agree within the problem's tolerance: stale or uninitialised memory, and results that depend on where the
    inputs live, differ far more; bitwise identity would reject honest parallel reductions (OpenMP reduction
    order, GPU atomics)."""
    fresh = g.host.adopt(trees.clone(trial.inputs))
    _reference_first(pc, fresh, g)
    try:
        again, _, seen = call_checked(model, fresh, pc, g, monitor=g.require_kernel)
    finally:
        g.host.forget(fresh)
    g.ran("determinism")
    if g.require_kernel:
        g.ran("kernel_launch")
        if not seen:
            raise CandidateFailure(
                Status.REJECTED,
                "kernel-launch check: forward called no kernel compiled from the candidate "
                "(no Triton kernel or extension function it defines ran)",
            )
    cmp = _agree(again, out, trial, pc)
    if not cmp.ok:
        cmp.reason = (
            f"determinism check: {trial.distribution} inputs: the same values in other buffers gave a different "
            f"result: {cmp.reason}"
        )
        return cmp
    return Comparison(True)


def _agree(again: Any, out: Any, trial: Trial, pc: PreparedCase) -> Comparison:
    """Two calls on the same values: under the measured rule each may be `multiple` budgets from the float64
    result, so they may differ by twice that; else the fixed tolerance."""
    c = pc.criterion
    if c.rule == "measured" and trial.oracle is not None:
        twice = Criterion(c.rule, c.atol, c.rtol, 2 * c.multiple - 1)  # check() adds one for the reference's own
        return twice.check(again, out, budgets=trial.oracle.budgets)
    return compare(again, out, c.atol, c.rtol, norm=c.rule != "kernelbench")
