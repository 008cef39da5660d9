"""The evaluation itself, run inside an isolated worker process.

Phase A (trusted) runs before any candidate code exists in the process: the problem is executed, every
input set is built from seeds the parent drew, reference outputs are computed, the torch.compile
baseline is compiled and checked. Phase B loads the candidate, checks it on every case and trial, then
times baseline and candidate with the one timer, interleaved.
"""

from __future__ import annotations

import platform as pyplatform
import random
import sys
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch
from torch.utils._pytree import tree_flatten

from kernelevolve.eval.candidate import CandidateLoadError, detect_languages, load_candidate
from kernelevolve.eval.correctness import Comparison, compare, inputs_unchanged, snapshot
from kernelevolve.eval.integrity import changed, fingerprint
from kernelevolve.eval.job import EvalJob
from kernelevolve.eval.result import CaseResult, EvalResult, Status
from kernelevolve.eval.timing import Timer, TimerConfig
from kernelevolve.platforms import extension_cache, get_platform
from kernelevolve.problem.inputs import (
    allowed_distributions,
    build_init_inputs,
    build_inputs,
    build_model,
    problem_dtype,
)
from kernelevolve.problem.problem import (
    ProblemError,
    bind_case,
    case_defaults,
    exec_problem,
    shape_cases,
    source_hash,
    tolerance,
)

Report = Callable[[str], None]


@dataclass
class Trial:
    distribution: str
    inputs: list[Any]
    reference: Any


@dataclass
class PreparedCase:
    case: dict[str, Any]
    shape: dict[str, Any]
    init: list[Any]
    param_seed: int
    atol: float
    rtol: float
    ref_model: torch.nn.Module
    trials: list[Trial]
    timing_sets: list[list[Any]]
    compiled: Any = None
    compile_ok: bool | None = None
    compile_reason: str = ""
    notes: list[str] = field(default_factory=list)


class CandidateFailure(Exception):
    def __init__(self, status: Status, reason: str):
        super().__init__(reason)
        self.status = status
        self.reason = reason


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def _finite(out: Any) -> bool:
    leaves, _ = tree_flatten(out)
    return all(bool(torch.isfinite(x).all()) for x in leaves if isinstance(x, torch.Tensor) and x.is_floating_point())


def _shape_of(module: Any, case: dict[str, Any]) -> dict[str, Any]:
    if case:
        return dict(case)
    return {k: v for k, v in vars(module).items() if k.isupper() and isinstance(v, int) and not isinstance(v, bool)}


def classify(e: BaseException) -> Status:
    """Compile errors raised lazily (Triton JIT at first launch, extension builds) vs runtime errors."""
    kind = f"{type(e).__module__}.{type(e).__name__}"
    text = str(e)
    if kind.startswith("triton.") and ("Compil" in kind or "OutOfResources" in kind):
        return Status.COMPILE_ERROR
    if "Error building extension" in text or "ninja" in text and "error" in text.lower():
        return Status.COMPILE_ERROR
    return Status.RUNTIME_ERROR


def _describe(e: BaseException, limit: int = 600) -> str:
    text = f"{type(e).__name__}: {e}"
    return text if len(text) <= limit else text[:limit] + " ..."


def prepare(job: EvalJob, module: Any, device: torch.device, rng: random.Random, report: Report) -> list[PreparedCase]:
    """Phase A: everything the verdict is measured against, before candidate code is loaded."""
    platform = get_platform(job.target)
    cases = shape_cases(module)
    defaults = case_defaults(module, cases)
    dtype = problem_dtype(module)
    distributions = allowed_distributions(module)
    atol, rtol = tolerance(module, str(dtype).removeprefix("torch."))
    prepared: list[PreparedCase] = []
    for ci, case in enumerate(cases):
        report(f"reference case {ci}")
        bind_case(module, case, defaults)
        init = build_init_inputs(module)
        param_seed = rng.getrandbits(62)
        try:
            ref_model = build_model(module.Model, init, param_seed, dtype, device)
        except Exception as e:  # noqa: BLE001
            raise ProblemError(f"{job.problem_path}: constructing Model failed: {_describe(e)}") from e
        trials: list[Trial] = []
        notes: list[str] = []
        given_finite = True
        attempts, skipped = 0, set()
        while len(trials) < job.trials and attempts < job.trials + len(distributions):
            dist = distributions[attempts % len(distributions)]
            attempts += 1
            if dist in skipped:
                continue
            inputs = build_inputs(module, rng.getrandbits(62), dist, dtype, device)
            try:
                with torch.no_grad():
                    ref = ref_model(*inputs)
                _sync(device)
            except Exception as e:  # noqa: BLE001
                if dist == "given":
                    raise ProblemError(f"{job.problem_path}: the reference Model raised {_describe(e)}") from e
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
        timing_sets = [
            build_inputs(module, rng.getrandbits(62), "given", dtype, device) for _ in range(job.timing_sets)
        ]
        pc = PreparedCase(
            case, _shape_of(module, case), init, param_seed, atol, rtol, ref_model, trials, timing_sets, notes=notes
        )
        if job.compile_baseline and platform.compile_baseline:
            report(f"compile baseline case {ci}")
            _prepare_compiled(pc, device)
        prepared.append(pc)
    bind_case(module, {}, defaults)
    return prepared


def _prepare_compiled(pc: PreparedCase, device: torch.device) -> None:
    """torch.compile the reference and check it like a candidate: a wrong compiled baseline is never used."""
    try:
        compiled = torch.compile(pc.ref_model)
        verdict = Comparison(True)
        with torch.no_grad():
            for trial in pc.trials:
                verdict = verdict.merge(compare(compiled(*trial.inputs), trial.reference, pc.atol, pc.rtol))
        _sync(device)
        pc.compiled = compiled if verdict.ok else None
        pc.compile_ok = verdict.ok
        pc.compile_reason = "" if verdict.ok else f"torch.compile baseline is wrong: {verdict.reason}"
    except Exception as e:  # noqa: BLE001
        pc.compile_ok = False
        pc.compile_reason = f"torch.compile baseline failed: {_describe(e, 300)}"
        torch._dynamo.reset()


def check_case(
    pc: PreparedCase, new_cls: type, device: torch.device, dtype: torch.dtype
) -> tuple[Any, Comparison, float]:
    """Phase B correctness for one case: every trial, inputs verified unchanged. Also returns the seconds
    of the first call, which includes JIT compilation (Triton)."""
    try:
        model = build_model(new_cls, pc.init, pc.param_seed, dtype, device, reference=pc.ref_model)
    except Exception as e:  # noqa: BLE001
        raise CandidateFailure(classify(e), f"constructing ModelNew failed: {_describe(e)}") from e
    verdict = Comparison(True)
    first_call_s = 0.0
    for i, trial in enumerate(pc.trials):
        before = snapshot(trial.inputs)
        try:
            t0 = time.perf_counter()
            with torch.no_grad():
                out = model(*trial.inputs)
            _sync(device)
            if i == 0:
                first_call_s = time.perf_counter() - t0
        except Exception as e:  # noqa: BLE001
            traceback.print_exc()
            raise CandidateFailure(classify(e), f"forward raised {_describe(e)}") from e
        changed = inputs_unchanged(trial.inputs, before)
        if changed:
            return model, Comparison(False, changed), first_call_s
        cmp = compare(out, trial.reference, pc.atol, pc.rtol)
        if not cmp.ok:
            cmp.reason = f"{trial.distribution} inputs: {cmp.reason}"
        verdict = verdict.merge(cmp)
    return model, verdict, first_call_s


def time_case(timer: Timer, pc: PreparedCase, model: torch.nn.Module, result: CaseResult) -> None:
    fns: dict[str, Callable[[list[Any]], Any]] = {
        "eager": lambda inp: pc.ref_model(*inp),
        "candidate": lambda inp: model(*inp),
    }
    if pc.compiled is not None:
        fns["compile"] = lambda inp, c=pc.compiled: c(*inp)
    with torch.no_grad():
        stats = timer.time_interleaved(fns, pc.timing_sets)
        host = timer.time_host(fns, pc.timing_sets)
        graphs = timer.time_graphs(fns, pc.timing_sets[0])
    result.t_candidate_ms, result.t_candidate_iqr_ms = stats["candidate"].median_ms, stats["candidate"].iqr_ms
    result.t_eager_ms, result.t_eager_iqr_ms = stats["eager"].median_ms, stats["eager"].iqr_ms
    result.timing_iters = stats["candidate"].n
    if "compile" in stats:
        result.t_compile_ms, result.t_compile_iqr_ms = stats["compile"].median_ms, stats["compile"].iqr_ms
    for kind, measured in (("graph", graphs), ("host", host)):
        for name, st in measured.items():
            if st is not None:
                setattr(result, f"t_{name}_{kind}_ms", st.median_ms)


def _versions(device: torch.device) -> dict[str, str]:
    v = {"python": pyplatform.python_version(), "torch": torch.__version__}
    if "triton" in sys.modules or device.type == "cuda":
        try:
            import triton

            v["triton"] = triton.__version__
        except ImportError:
            pass
    if device.type == "cuda":
        v["cuda"] = str(torch.version.cuda or torch.version.hip)
    return v


def run_job(job: EvalJob, report: Report) -> EvalResult:
    platform = get_platform(job.target)
    stages: dict[str, float] = {}
    t0 = time.perf_counter()
    if platform.device_type == "cuda":
        if not torch.cuda.is_available():
            raise ProblemError(f"target {job.target!r} needs a GPU, but torch sees none (torch {torch.__version__})")
        device = torch.device("cuda", job.device_index)
        torch.cuda.set_device(device)
    else:
        device = torch.device("cpu")
    source = Path(job.candidate_path).read_text()
    languages = detect_languages(source)
    result = EvalResult(
        status=Status.OK,
        correct=False,
        target=job.target,
        languages=languages,
        device=torch.cuda.get_device_name(device) if device.type == "cuda" else pyplatform.machine(),
        problem_hash=source_hash(Path(job.problem_path).read_text()),
        candidate_hash=source_hash(source),
        versions=_versions(device),
    )
    rng = random.Random(job.seed)

    # ---- phase A: trusted ----
    report("load")
    module = exec_problem(job.problem_path)
    dtype = problem_dtype(module)
    prepared = prepare(job, module, device, rng, report)
    compile_notes = {pc.compile_reason for pc in prepared if pc.compile_reason}
    result.compile_baseline = "; ".join(sorted(compile_notes))
    use_compile = job.baseline == "compile" and all(pc.compile_ok for pc in prepared)
    result.baseline = "compile" if use_compile else "eager"
    if job.baseline == "compile" and not use_compile:
        result.compile_baseline = result.compile_baseline or "torch.compile baseline not run on this target"
        result.compile_baseline += "; fitness uses the eager baseline"
    stages["load"] = time.perf_counter() - t0

    # ---- phase B: the candidate ----
    unsupported = platform.unsupported(languages)
    if unsupported:
        return _fail(
            result, Status.REJECTED, f"{', '.join(unsupported)} kernels cannot run on the {job.target} target", stages
        )
    result.interpreted = platform.is_interpreted(languages)
    t1 = time.perf_counter()
    report("compile")
    # C++/CUDA extensions build once per C++ source (platforms/extension_cache.py).
    extension_cache.install()
    watched = {"problem": module}
    before = fingerprint(watched)
    try:
        cand = load_candidate(job.candidate_path)
    except CandidateLoadError as e:
        traceback.print_exc()
        return _fail(result, Status.COMPILE_ERROR, str(e), stages)
    stages["compile"] = time.perf_counter() - t1

    t2 = time.perf_counter()
    cases = shape_cases(module)
    defaults = case_defaults(module, cases)
    models: list[torch.nn.Module] = []
    all_ok = True
    first_calls = 0.0  # first call per case: JIT compilation, counted in the compile stage
    for ci, pc in enumerate(prepared):
        report(f"correctness case {ci}")
        bind_case(module, pc.case, defaults)
        cr = CaseResult(
            shape=pc.shape,
            correct=False,
            trials=[t.distribution for t in pc.trials],
            compile_baseline_correct=pc.compile_ok,
        )
        result.cases.append(cr)
        try:
            model, verdict, first_call_s = check_case(pc, cand.ModelNew, device, dtype)
            first_calls += first_call_s
        except CandidateFailure as e:
            return _fail(result, e.status, f"case {ci} {pc.shape}: {e.reason}", stages)
        cr.correct, cr.max_abs_err, cr.max_rel_err = verdict.ok, verdict.max_abs_err, verdict.max_rel_err
        cr.reason = "; ".join([verdict.reason, *pc.notes]).strip("; ")
        models.append(model)
        all_ok = all_ok and verdict.ok
    stages["compile"] += first_calls
    stages["correctness"] = time.perf_counter() - t2 - first_calls
    bind_case(module, {}, defaults)  # our own per-case bindings are not the candidate's
    tampered = changed(before, watched)
    if tampered:
        return _fail(result, Status.REJECTED, _tamper_reason(tampered), stages)
    if not all_ok:
        bad = [f"case {i} {c.shape}: {c.reason}" for i, c in enumerate(result.cases) if not c.correct]
        return _fail(
            result, Status.INCORRECT, bad[0] + (f" (and {len(bad) - 1} more cases)" if len(bad) > 1 else ""), stages
        )

    if not result.interpreted:
        t3 = time.perf_counter()
        timer = Timer(device, TimerConfig(max_iters=job.max_iters, budget_s=job.budget_s))
        for ci, (pc, model, cr) in enumerate(zip(prepared, models, result.cases)):
            report(f"timing case {ci}")
            bind_case(module, pc.case, defaults)
            try:
                time_case(timer, pc, model, cr)
            except Exception as e:  # noqa: BLE001
                traceback.print_exc()
                return _fail(
                    result, classify(e), f"case {ci} {pc.shape}: forward raised while timed: {_describe(e)}", stages
                )
            base = cr.t_compile_ms if use_compile else cr.t_eager_ms
            cr.speedup = base / cr.t_candidate_ms if base and cr.t_candidate_ms else None
            gbase = cr.t_compile_graph_ms if use_compile else cr.t_eager_graph_ms
            if gbase and cr.t_candidate_graph_ms:
                cr.speedup_graph = gbase / cr.t_candidate_graph_ms
        stages["timing"] = time.perf_counter() - t3
        bind_case(module, {}, defaults)
        tampered = changed(before, watched)
        if tampered:
            return _fail(result, Status.REJECTED, _tamper_reason(tampered), stages)
    result.stages = stages
    return result.finalize()


def _tamper_reason(names: list[str]) -> str:
    shown = ", ".join(names[:5]) + (f" and {len(names) - 5} more" if len(names) > 5 else "")
    return f"integrity check: the candidate re-bound {shown}"


def _fail(result: EvalResult, status: Status, reason: str, stages: dict[str, float]) -> EvalResult:
    result.status = status
    result.reason = reason
    result.stages = stages
    return result.finalize()
