"""Phase A of an evaluation, trusted: everything the verdict is measured against, built before any candidate
code exists in the process. Inputs per case and trial from seeds the parent drew, reference outputs for them
and for the timing input sets, the torch.compile baseline checked against them.
"""

from __future__ import annotations

import math
import random
import time
from collections.abc import Callable
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import torch

from kernelevolve.eval.wire import EvalJob
from kernelevolve.eval.worker import memory, trees
from kernelevolve.eval.worker.correctness import KERNELBENCH, Comparison, Criterion
from kernelevolve.eval.worker.memory import MemoryPlan, make_plan
from kernelevolve.eval.worker.oracle import BUDGET_MULTIPLE, Float64Reference, LeafBudget, Oracle, unit_roundoff
from kernelevolve.eval.worker.outputs import aliased, spans
from kernelevolve.eval.worker.poison import output_sizes
from kernelevolve.eval.worker.speed import tensor_bytes
from kernelevolve.platforms import for_device
from kernelevolve.problem.inputs import (
    allowed_distributions,
    build_init_inputs,
    build_inputs,
    build_model,
    floats_redrawable,
    out_of_memory,
    problem_dtype,
)
from kernelevolve.problem.problem import (
    ProblemError,
    bind_case,
    case_defaults,
    check_cases,
    problem_flops,
    shape_cases,
    tolerance,
)

Report = Callable[[str], None]
HOST = torch.device("cpu")


class LoadClock:
    """Seconds of a stage by part (load: inputs drawn, reference calls, the compiled baseline; timing: the pass,
    the cross-checks, the unseen-inputs check): a stage's total alone does not say which part to cut. Each part
    ends with a device synchronize, so asynchronous GPU work is counted in the part that launched it."""

    def __init__(self, device: torch.device) -> None:
        self.device = device
        self.parts: dict[str, float] = {}

    @contextmanager
    def part(self, name: str):
        t0 = time.perf_counter()
        try:
            yield
            sync(self.device)  # not after an error: the caller reports that one
        finally:
            self.parts[name] = self.parts.get(name, 0.0) + time.perf_counter() - t0


@dataclass
class Trial:
    distribution: str
    inputs: list[Any]
    reference: Any
    oracle: Oracle | None = None  # the float64 result and the measured budget (the "measured" rule)
    on_host: bool = False  # kept on the host by the memory plan; memory.resident brings it in


# Input sets per case held back for one unseen-inputs check (harness.check_unseen_inputs): rounds of two, a
# second round only where the first fails. Each set is used once: the cpu target, which may time a case twice on a
# busy host, holds back a second check's worth (a set used in the first pass has been seen by the second).
UNSEEN_SETS = 4

# A call on contents the candidate has never seen may take this many times its timed median, plus the slack, before
# the timed calls are judged to have reused results (a cache keyed by content survives the rotation of the sets).
# The bound is what such a cache can gain. A CPU host shared with other processes stalls single calls for scheduler
# slices, hence the room there; a GPU evaluates one candidate at a time and its single calls, timed by events as the
# series is, repeat within a few per cent (scaled by the reference's own drift on the new contents,
# harness._work_drift). On the host both sides of the comparison are the judge's clock around one request, so the
# request's own cost is on both and the bound scales with the call alone: a fixed slack there (0.1 ms until issue
# 45, class 4) was most of the bound for calls under 0.1 ms, and let a cache keyed by address on a 0.04 ms jagged
# call pass (tests/adversarial/exploits/caches_jagged_by_pointer.py).
UNSEEN_FACTOR = {"host": 3.0, "device": 1.25}
UNSEEN_SLACK_MS = {"host": 0.0, "device": 0.02}
# The cpu target's sampled timed calls (eval/worker/sampled.py) are held to the host's bound too.


def unseen_sets_for(device: torch.device) -> int:
    return UNSEEN_SETS * (1 if for_device(device).separate_device() else 2)


@dataclass
class PreparedCase:
    case: dict[str, Any]
    shape: dict[str, Any]
    init: list[Any]
    param_seed: int
    criterion: Criterion
    ref_model: torch.nn.Module
    trials: list[Trial]
    timing_sets: list[list[Any]]
    timing_refs: list[Any] = field(default_factory=list)  # reference output of each timing set
    # Input sets the candidate never sees before timing ends, and their references: the unseen-inputs check.
    unseen_sets: list[list[Any]] = field(default_factory=list)
    unseen_refs: list[Any] = field(default_factory=list)
    unseen_used: int = 0  # held-back sets already shown to the candidate: never used twice
    out_sizes: list[int] = field(default_factory=list)  # bytes of each output tensor: what poisoning covers
    ref_aliases_input: bool = False  # the reference returns (a view of) an input: aliasing is then allowed
    ref_max_abs: float | None = None
    min_bytes: int = 0  # inputs + outputs of one call, each moved once: the roofline's memory term
    flops: float | None = None  # the problem's FLOPS for this case, when it declares them
    compiled: Any = None
    compile_ok: bool | None = None
    compile_reason: str = ""
    notes: list[str] = field(default_factory=list)
    # The measured budget of the given-distribution trials: timing and unseen sets are judged with it against their
    # working-precision references (Criterion.check with budgets).
    set_budgets: list[LeafBudget | None] | None = None
    memory: MemoryPlan = field(default_factory=MemoryPlan)
    # n -> n new input sets with their references, drawn by the problem from seeds the candidate never saw (the
    # case bound): the judge's proof block on a GPU (eval/worker/proof.py) needs more than the held-back sets.
    fresh: Callable[[int], list[tuple[Any, Any]]] | None = None
    timed: bool = True  # False: one of the problem's CHECK_CASES, judged for correctness alone
    dtype: torch.dtype = torch.float32  # the case's floating dtype: the problem's DTYPE as the case binds it
    # The problem lets its floating inputs be redrawn (problem/inputs.floats_redrawable): a jagged set's sampled
    # timed call may then take new floating contents in its own buffers (eval/worker/sampled.py).
    floats_free: bool = False

    def judge(self, out: Any, trial: Trial) -> Comparison:
        return self.criterion.check(out, trial.reference, oracle=trial.oracle)

    def judge_set(self, out: Any, ref: Any) -> Comparison:
        return self.criterion.check(out, ref, budgets=self.set_budgets)


def criterion_for(job: EvalJob, module: Any, dtype: torch.dtype) -> Criterion:
    """The problem's TOLERANCE wins; else the job's rule, whose fallback (a trial without an oracle) is the
    per-dtype default tolerance."""
    if job.correctness == "kernelbench":
        return KERNELBENCH
    atol, rtol = tolerance(module, str(dtype).removeprefix("torch."))
    if getattr(module, "TOLERANCE", None) is not None:
        return Criterion("tolerance", atol, rtol)
    return Criterion("measured", atol, rtol, BUDGET_MULTIPLE)


def sync(device: torch.device) -> None:
    for_device(device).synchronize(device)


def describe(e: BaseException, limit: int = 600) -> str:
    text = f"{type(e).__name__}: {e}"
    return text if len(text) <= limit else text[:limit] + " ..."


def _float_leaves(out: Any) -> list[torch.Tensor]:
    return [x for x in trees.tensors(out) if x.is_floating_point() and x.numel()]


def _finite(out: Any) -> bool:
    return all(math.isfinite(float(v)) for x in _float_leaves(out) for v in torch.aminmax(x.detach()))


def _max_abs(out: Any) -> float | None:
    """Largest finite |value| over the floating outputs."""
    values = []
    for x in _float_leaves(out):
        lo, hi = (float(v) for v in torch.aminmax(x.detach()))
        finite = math.isfinite(lo) and math.isfinite(hi)
        values.append(max(-lo, hi) if finite else float(x.detach().abs().nan_to_num(0.0, 0.0, 0.0).max()))
    return max(values) if values else None


def _shape_of(module: Any, case: dict[str, Any]) -> dict[str, Any]:
    if case:
        return dict(case)
    return {k: v for k, v in vars(module).items() if k.isupper() and isinstance(v, int) and not isinstance(v, bool)}


def prepare(
    job: EvalJob,
    module: Any,
    device: torch.device,
    dtype: torch.dtype,
    rng: random.Random,
    report: Report,
    timed: bool,
    clock: LoadClock | None = None,
) -> list[PreparedCase]:
    """Every shape case of the problem, each with at least one trial; reference outputs for the timing sets
    only when the candidate will be timed. CHECK_CASES for this device follow, with trials alone (never timed).
    `dtype` is the problem's DTYPE; a case that binds DTYPE (a check case in half precision) runs in its own."""
    clock = clock or LoadClock(device)
    cases = shape_cases(module)
    n_timed = len(cases)
    cases += check_cases(module, device.type)
    defaults = case_defaults(module, cases)
    distributions = allowed_distributions(module)
    if criterion_for(job, module, dtype).rule == "kernelbench":
        distributions = ("given",)  # KernelBench judges get_inputs() alone
    prepared: list[PreparedCase] = []
    for ci, case in enumerate(cases):
        report(f"reference case {ci}")
        timed_case = ci < n_timed
        bind_case(module, case, defaults)
        dtype = problem_dtype(module)
        criterion = criterion_for(job, module, dtype)
        init = build_init_inputs(module)
        param_seed = rng.getrandbits(62)
        try:
            ref_model = build_model(module.Model, init, param_seed, dtype, device)
        except Exception as e:  # noqa: BLE001
            if out_of_memory(e):
                raise
            raise ProblemError(f"{job.problem_path}: constructing Model failed: {describe(e)}") from e
        reference64 = Float64Reference(ref_model, dtype, unit_roundoff(dtype, job.allow_tf32))
        settle = _Settle(job, criterion, reference64, device, rng, clock, timed)
        trials, notes = _trials(job, module, ref_model, distributions, dtype, device, rng, clock, settle)
        notes += sorted(settle.notes)
        first = settle.first
        if not trials:
            raise ProblemError(f"{job.problem_path}: case {ci} {case}: no input distribution gives a usable reference")
        plan: MemoryPlan = first["plan"]
        with clock.part("inputs"):
            timing_sets = [
                build_inputs(module, rng.getrandbits(62), "given", dtype, device)
                for _ in range(plan.timing_sets if timed_case else 0)
            ]
        pc = PreparedCase(
            case, _shape_of(module, case), init, param_seed, criterion, ref_model, trials, timing_sets, notes=notes
        )
        pc.memory, pc.timed, pc.dtype = plan, timed_case, dtype
        pc.floats_free = floats_redrawable(module)
        pc.set_budgets = _set_budgets(trials)
        pc.out_sizes, pc.ref_aliases_input, pc.min_bytes = first["out_sizes"], first["aliases"], first["min_bytes"]
        maxima = [m for m in (_max_abs(t.reference) for t in trials) if m is not None]
        pc.ref_max_abs = max(maxima) if maxima else None
        pc.flops = problem_flops(module)
        if timed and timed_case:
            _timing_references(pc, module, dtype, device, rng, clock)
        if job.compile_baseline and timed_case:  # the evaluator resolved the platform's default (cpu: off unless asked)
            report(f"compile baseline case {ci}")
            with clock.part("compile_baseline"):
                _prepare_compiled(pc, device)
        prepared.append(pc)
    bind_case(module, {}, defaults)
    return prepared


def _timing_references(
    pc: PreparedCase, module: Any, dtype: torch.dtype, device: torch.device, rng: random.Random, clock: LoadClock
) -> None:
    """A timed case's references for its timing sets, and its held-back sets (the unseen-inputs check)."""
    plan, wanted = pc.memory, unseen_sets_for(device)
    if plan.unseen_sets < wanted:
        pc.notes.append(
            f"{plan.unseen_sets} of {wanted} held-back input sets: the host cannot hold more at these sizes"
            + (" (the unseen-inputs check is skipped)" if not plan.unseen_sets else "")
        )
    with clock.part("reference"), torch.no_grad():
        pc.timing_refs = [pc.ref_model(*inputs) for inputs in pc.timing_sets]
    held_back = _fresh_sets(module, pc.ref_model, dtype, device, rng)
    with clock.part("inputs"):
        for _ in range(plan.unseen_sets):  # one at a time: each may go to the host before the next is made
            inputs, ref = held_back(1)[0]
            if plan.unseen_on_host:
                inputs, ref = memory.to(inputs, HOST), memory.to(ref, HOST)
            pc.unseen_sets.append(inputs)
            pc.unseen_refs.append(ref)
    pc.fresh = held_back  # the GPU's proof block, and the cpu target's sampled timed calls (eval/worker/sampled.py)


def _fresh_sets(
    module: Any, ref_model: Any, dtype: torch.dtype, device: torch.device, rng: random.Random
) -> Callable[[int], list[tuple[Any, Any]]]:
    """n -> n input sets the candidate has not seen, drawn from `rng`, with their references (the case bound)."""

    def make(n: int) -> list[tuple[Any, Any]]:
        made = []
        with torch.no_grad():
            for _ in range(n):
                inputs = build_inputs(module, rng.getrandbits(62), "given", dtype, device)
                made.append((inputs, ref_model(*inputs)))
        return made

    return make


def _trials(
    job: EvalJob,
    module: Any,
    ref_model: torch.nn.Module,
    distributions: tuple[str, ...],
    dtype: torch.dtype,
    device: torch.device,
    rng: random.Random,
    clock: LoadClock,
    settle: Callable[[Trial], None],
) -> tuple[list[Trial], list[str]]:
    trials: list[Trial] = []
    notes: list[str] = []
    given_finite = True
    attempts, skipped = 0, set()
    wanted = job.trials
    while len(trials) < wanted and attempts < job.trials + len(distributions):
        dist = distributions[attempts % len(distributions)]
        attempts += 1
        if dist in skipped:
            continue
        with clock.part("inputs"):
            inputs = build_inputs(module, rng.getrandbits(62), dist, dtype, device)
        try:
            with clock.part("reference"), torch.no_grad():
                ref = ref_model(*inputs)
        except Exception as e:  # noqa: BLE001
            if out_of_memory(e):
                raise
            if dist == "given":
                raise ProblemError(f"{job.problem_path}: the reference Model raised {describe(e)}") from e
            skipped.add(dist)
            notes.append(f"{dist} inputs skipped: the reference raised {type(e).__name__}")
            continue
        if dist == "given":
            given_finite = _finite(ref)
        elif given_finite and not _finite(ref):
            skipped.add(dist)
            notes.append(f"{dist} inputs skipped: outside the problem's domain (reference not finite)")
            continue
        trials.append(Trial(dist, inputs, ref))
        settle(trials[-1])
        held = settle.first["plan"].trials  # the plan, made from the first trial's sizes, may hold fewer
        if held < wanted:
            wanted = held
            notes.append(f"{held} of {job.trials} trials: the host cannot hold more at these sizes")
    return trials, notes


class _Settle:
    """What happens to a trial just made: its float64 oracle, what the first one says of the case, then the
    memory plan (made from the first trial's sizes) decides whether it waits on the host."""

    def __init__(
        self,
        job: EvalJob,
        criterion: Criterion,
        reference64: Float64Reference,
        device: torch.device,
        rng: random.Random,
        clock: LoadClock,
        timed: bool,
    ) -> None:
        self.job, self.criterion, self.reference64 = job, criterion, reference64
        self.device, self.rng, self.clock, self.timed = device, rng, clock, timed
        self.first: dict[str, Any] = {}
        self.notes: set[str] = set()

    def __call__(self, trial: Trial) -> None:
        if self.criterion.rule == "measured":
            with self.clock.part("oracle"):
                oracle = self.reference64.measure(trial.inputs, trial.reference, self.rng.getrandbits(62))
            if isinstance(oracle, str):
                self.notes.add(
                    f"{trial.distribution} inputs judged by the fixed tolerance: no float64 oracle, {oracle}"
                )
            else:
                trial.oracle = oracle
        if not self.first:
            job = self.job
            self.first.update(
                out_sizes=output_sizes(trial.reference),
                aliases=_aliases(trial.reference, trial.inputs),
                min_bytes=tensor_bytes(trial.inputs, trial.reference),
                plan=make_plan(
                    self.device,
                    tensor_bytes(trial.inputs, trial.reference),
                    tensor_bytes(trial.oracle.exact) if trial.oracle is not None else 0,
                    job.trials,
                    job.timing_sets if self.timed else 0,
                    unseen_sets_for(self.device) if self.timed else 0,
                ),
            )
        if self.first["plan"].trials_on_host:
            trial.inputs, trial.reference = memory.to(trial.inputs, HOST), memory.to(trial.reference, HOST)
            if trial.oracle is not None:
                trial.oracle = Oracle(memory.to(trial.oracle.exact, HOST), trial.oracle.budgets)
            trial.on_host = True


def _set_budgets(trials: list[Trial]) -> list[LeafBudget | None] | None:
    """The larger budget, leaf by leaf, over the given-distribution trials with an oracle (else over all)."""
    with_oracle = [t for t in trials if t.oracle is not None]
    chosen = [t for t in with_oracle if t.distribution == "given"] or with_oracle
    if not chosen:
        return None
    merged = list(chosen[0].oracle.budgets)
    for t in chosen[1:]:
        merged = [a.merge(b) if a is not None and b is not None else a for a, b in zip(merged, t.oracle.budgets)]
    return merged


def _aliases(ref: Any, inputs: list[Any]) -> bool:
    return bool(aliased(ref, spans(inputs, "input {i}")))


def _prepare_compiled(pc: PreparedCase, device: torch.device) -> None:
    """torch.compile the reference and check it like a candidate: a wrong compiled baseline is never used."""
    try:
        compiled = torch.compile(pc.ref_model)
        verdict = Comparison(True)
        with torch.no_grad():
            for trial in pc.trials:
                with memory.resident(trial, device):
                    verdict = verdict.merge(pc.judge(compiled(*trial.inputs), trial))
        sync(device)
        pc.compiled = compiled if verdict.ok else None
        pc.compile_ok = verdict.ok
        pc.compile_reason = "" if verdict.ok else f"torch.compile baseline is wrong: {verdict.reason}"
    except Exception as e:  # noqa: BLE001
        pc.compile_ok = False
        pc.compile_reason = f"torch.compile baseline failed: {describe(e, 300)}"
        torch._dynamo.reset()
