"""The one result type of an evaluation, shared by every command (DESIGN.md "Evaluation result")."""

from __future__ import annotations

import math
from enum import Enum
from typing import Any

from pydantic import BaseModel, Field, SerializerFunctionWrapHandler, computed_field, model_serializer, model_validator


class Status(str, Enum):
    OK = "ok"
    COMPILE_ERROR = "compile_error"
    RUNTIME_ERROR = "runtime_error"
    INCORRECT = "incorrect"
    TIMEOUT = "timeout"
    CRASHED = "crashed"
    REJECTED = "rejected"
    HARNESS_LIMIT = "harness_limit"  # the harness's own phase ran out of a resource: no verdict on the candidate
    # A timing check failed while the judge's own measurements showed the host contended: no verdict on the
    # candidate either way (docs/harness.md, "A busy host").
    INCONCLUSIVE = "inconclusive"


# Outcomes that say more about the limits and the machine than about the kernel: never reused from the store, and a
# root stored with one is evaluated again on a resume.
MACHINE_STATUSES = (Status.TIMEOUT, Status.CRASHED, Status.HARNESS_LIMIT, Status.INCONCLUSIVE)
# Of those, the ones a search evaluates again later in the run (driver.MACHINE_RETRIES): the machine may be freer.
RETRIED_STATUSES = (Status.HARNESS_LIMIT, Status.INCONCLUSIVE)


class HostContention(BaseModel):
    """What the judge's own timing of the reference, in its own process while the candidate's process idled, showed
    of the host (eval/worker/contention.py; docs/harness.md, "A busy host")."""

    shortfall: float | None = Field(
        None, description="of the CPU the judge's timing wanted (one, or less where it wanted less), the share denied"
    )
    spread: float = Field(1.0, description="the slowest over the fastest median of the judge's looks")
    candidate_cpu: float | None = Field(None, description="CPUs the candidate's processes used meanwhile")
    load: float | None = Field(None, description="the 1-minute load average per core")
    pass_shortfall: float | None = Field(
        None,
        description="over the timing pass, the share of the CPU the judge and the candidate's process wanted"
        " that they waited for",
    )
    pass_others_cpu: float | None = Field(
        None, description="CPUs the candidate's other processes (not the one serving calls) used over the pass"
    )
    contended: bool = False
    by_candidate: bool = Field(False, description="the signals fired while the candidate's processes ran")

    def describe(self) -> str:
        short = "-" if self.shortfall is None else f"{self.shortfall:.0%}"
        cpu = "" if self.candidate_cpu is None else f", the candidate's processes {self.candidate_cpu:.2f} CPUs"
        load = "" if self.load is None else f", load {self.load:.1f} per core"
        during = (
            ""
            if self.pass_shortfall is None
            else f"; over the timing pass the judge and the candidate's process waited for {self.pass_shortfall:.0%}"
            " of the CPU they wanted"
        )
        return (
            f"the judge's own timing of the reference was denied {short} of the CPU it wanted and its looks "
            f"spread {self.spread:.2f}x (slowest over fastest median){cpu}{load}{during}"
        )


class Times(BaseModel):
    """One timed function's figures (the candidate, the eager reference, the torch.compile baseline), in ms."""

    median_ms: float | None = Field(None, description="median of the interleaved timing loop")
    iqr_ms: float | None = Field(None, description="interquartile range of the same samples")
    # CUDA-graph replay timings (launch overhead removed); null where capture failed or on the CPU.
    graph_ms: float | None = None
    # Host clock around call + whole-device synchronize (cuda): counts side-stream work and launch overhead.
    host_ms: float | None = None
    # Host time to issue the call while the device is busy (cuda): launch overhead, with no device wait in it.
    launch_ms: float | None = None
    # Host clock from the call's return to the device going idle (cuda): at most the call's own device time plus
    # the synchronize's latency, unless work ran where the events could not see it.
    tail_ms: float | None = None


class CandidateTimes(Times):
    # The faster of calls on input contents the candidate had not seen before (the unseen-inputs check), timed
    # as host_ms on cuda and as median_ms on the cpu.
    unseen_ms: float | None = None
    # cpu: median minor page faults per timed call. Thousands mean the allocator handed each call fresh pages (an
    # output or temporary over glibc's mmap threshold), so the time includes faulting them in and zeroing them.
    faults_per_call: float | None = None


class EagerTimes(Times):
    # The reference timed alone in the judge's own process, where the candidate has a process of its own: on the
    # cpu the timing cross-check bounds median_ms (timed beside the candidate there) by it; on GPUs the eager and
    # compile median_ms are the lower of the two processes' medians.
    judge_ms: float | None = None
    faults_per_call: float | None = Field(None, description="as CandidateTimes.faults_per_call")


class CompileTimes(Times):
    correct: bool | None = Field(None, description="whether torch.compile's output matched the reference")


class Timings(BaseModel):
    """The case's timing pass: each timed function's figures and the loop's iterations."""

    candidate: CandidateTimes = Field(default_factory=CandidateTimes)
    eager: EagerTimes = Field(default_factory=EagerTimes)
    compile: CompileTimes = Field(default_factory=CompileTimes)
    iters: int | None = Field(None, description="iterations of the candidate's timing loop")

    def of(self, name: str) -> Times:
        """The figures of the timed function `name` ("candidate", "eager" or "compile")."""
        return {"candidate": self.candidate, "eager": self.eager, "compile": self.compile}[name]


class Accuracy(BaseModel):
    """How the case's outputs were compared with the reference's: the rule, the trials, the errors measured."""

    trials: list[str] = Field(default_factory=list, description="input distribution of each trial run")
    max_abs_err: float | None = None
    max_rel_err: float | None = None
    norm_err: float | None = Field(None, description="largest ||out - ref||_2 / ||ref||_2 over the trials")
    ref_max_abs: float | None = Field(None, description="largest |ref| over the trials (finite values)")
    atol: float | None = Field(
        None, description="the fixed tolerance: the rule, or the fallback of a trial without an oracle"
    )
    rtol: float | None = None
    rule: str = Field("", description="the rule the case was judged by (eval/worker/correctness.Criterion)")
    error_ratio: float | None = Field(
        None, description="measured rule: the largest error over the reference's own rounding error, over the trials"
    )
    kernelbench_correct: bool | None = Field(
        None, description="KernelBench's verdict (atol = rtol = 1e-2) on the given inputs; None: not reached"
    )


class Roofline(BaseModel):
    """The least time the data movement and arithmetic take, against which the candidate's time is read."""

    min_bytes: int | None = Field(None, description="bytes every input and output take to move once")
    # GPU targets, from the device's peaks: the least time the hardware needs for min_bytes and any declared FLOPs.
    floor_ms: float | None = None
    # Whether the bytes (not the FLOPs) set that floor, and min_bytes at the device's measured bandwidth: a
    # kernel's share of the measured HBM bandwidth is bytes_ms / the candidate's median_ms.
    memory_bound: bool | None = None
    bytes_ms: float | None = None
    # With copy_floor: `dst.copy_(src)` of min_bytes (half read, half written), timed in the same interleaved loop:
    # what "bound by memory" costs at this size on this device, launch and ramp-up included.
    copy_ms: float | None = None


class Reliability(BaseModel):
    """Why the case's figures may not be trusted: what the host and the judge's clock allowed (see
    EvalResult.unreliable)."""

    contention: HostContention | None = Field(None, description="the host as the judge measured it (timed cases)")
    unresolved: str = Field(
        "",
        description="cpu: why the candidate's time is the judge's bound, not its report (a call below what the "
        "judge resolves around a request)",
    )


# Each flat JSON key (the order `eval --json`, the store and result.json files have always had: docs/design.md,
# "Evaluation result") and where it lives in CaseResult, as a dotted path.
FLAT_FIELDS: tuple[tuple[str, str], ...] = (
    ("shape", "shape"),
    ("correct", "correct"),
    ("max_abs_err", "accuracy.max_abs_err"),
    ("max_rel_err", "accuracy.max_rel_err"),
    ("reason", "reason"),
    ("trials", "accuracy.trials"),
    ("t_candidate_ms", "timing.candidate.median_ms"),
    ("t_eager_ms", "timing.eager.median_ms"),
    ("t_compile_ms", "timing.compile.median_ms"),
    ("t_candidate_iqr_ms", "timing.candidate.iqr_ms"),
    ("t_eager_iqr_ms", "timing.eager.iqr_ms"),
    ("t_compile_iqr_ms", "timing.compile.iqr_ms"),
    ("timing_iters", "timing.iters"),
    ("t_eager_judge_ms", "timing.eager.judge_ms"),
    ("candidate_faults_per_call", "timing.candidate.faults_per_call"),
    ("eager_faults_per_call", "timing.eager.faults_per_call"),
    ("t_candidate_graph_ms", "timing.candidate.graph_ms"),
    ("t_eager_graph_ms", "timing.eager.graph_ms"),
    ("t_compile_graph_ms", "timing.compile.graph_ms"),
    ("t_candidate_host_ms", "timing.candidate.host_ms"),
    ("t_eager_host_ms", "timing.eager.host_ms"),
    ("t_compile_host_ms", "timing.compile.host_ms"),
    ("t_candidate_launch_ms", "timing.candidate.launch_ms"),
    ("t_eager_launch_ms", "timing.eager.launch_ms"),
    ("t_compile_launch_ms", "timing.compile.launch_ms"),
    ("t_candidate_tail_ms", "timing.candidate.tail_ms"),
    ("t_candidate_unseen_ms", "timing.candidate.unseen_ms"),
    ("t_eager_tail_ms", "timing.eager.tail_ms"),
    ("t_compile_tail_ms", "timing.compile.tail_ms"),
    ("min_bytes", "roofline.min_bytes"),
    ("t_roofline_ms", "roofline.floor_ms"),
    ("memory_bound", "roofline.memory_bound"),
    ("t_bytes_ms", "roofline.bytes_ms"),
    ("t_copy_ms", "roofline.copy_ms"),
    ("speedup", "speedup"),
    ("speedup_graph", "speedup_graph"),
    ("compile_baseline_correct", "timing.compile.correct"),
    ("norm_err", "accuracy.norm_err"),
    ("ref_max_abs", "accuracy.ref_max_abs"),
    ("atol", "accuracy.atol"),
    ("rtol", "accuracy.rtol"),
    ("correctness", "accuracy.rule"),
    ("error_ratio", "accuracy.error_ratio"),
    ("kernelbench_correct", "accuracy.kernelbench_correct"),
    ("contention", "reliability.contention"),
    ("unresolved", "reliability.unresolved"),
    ("timed", "timed"),
)


class CaseResult(BaseModel):
    """One shape case: correctness over all trials, then interleaved timings.

    Held as typed groups (timing, accuracy, roofline, reliability) and written as the flat JSON of FLAT_FIELDS,
    which old runs, the store and `eval --json` readers know (docs/design.md, "Evaluation result"). Nested models
    with a flat (de)serialization, not flat storage with typed views: views over flat fields would read and write
    them by composed names, the very thing the groups replace, while here the code writes
    `cr.timing.of(name).graph_ms` and one table maps both ways. A field added to a group needs its row in
    FLAT_FIELDS (tests/test_case_result_flat.py fails without it).
    """

    shape: dict[str, Any]
    correct: bool
    reason: str = ""
    speedup: float | None = None
    speedup_graph: float | None = None
    timed: bool = Field(True, description="False: one of the problem's CHECK_CASES, judged for correctness alone")
    accuracy: Accuracy = Field(default_factory=Accuracy)
    timing: Timings = Field(default_factory=Timings)
    roofline: Roofline = Field(default_factory=Roofline)
    reliability: Reliability = Field(default_factory=Reliability)

    @model_validator(mode="before")
    @classmethod
    def _from_flat(cls, data: Any) -> Any:
        """Flat keys (a stored result, `eval --json`, keyword arguments) go into their groups."""
        if not isinstance(data, dict):
            return data
        data = dict(data)
        for flat, path in FLAT_FIELDS:
            if "." in path and flat in data:
                *groups, leaf = path.split(".")
                node = data
                for group in groups:
                    inner = node.get(group)
                    node[group] = inner = inner.model_dump() if isinstance(inner, BaseModel) else dict(inner or {})
                    node = inner
                node[leaf] = data.pop(flat)
        return data

    @model_serializer(mode="wrap")
    def _to_flat(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        """The flat JSON, key for key in FLAT_FIELDS' order (keys an exclude or include left out stay out)."""
        nested = handler(self)
        flat: dict[str, Any] = {}
        for key, path in FLAT_FIELDS:
            node: Any = nested
            for part in path.split("."):
                if not isinstance(node, dict) or part not in node:
                    break
                node = node[part]
            else:
                flat[key] = node
        return flat


class EvalResult(BaseModel):
    status: Status
    correct: bool
    reason: str = ""
    speedup: float | None = None
    fitness: float | None = 0.0
    baseline: str = "eager"
    cases: list[CaseResult] = Field(default_factory=list)
    target: str = ""
    device: str = ""
    languages: list[str] = Field(default_factory=list)
    interpreted: bool = False
    speedup_graph: float | None = None
    compile_baseline: str = Field("", description="why the torch.compile baseline was not used, if it was not")
    stages: dict[str, float] = Field(default_factory=dict, description="wall seconds per evaluation stage")
    problem_hash: str = ""
    candidate_hash: str = ""
    versions: dict[str, str] = Field(default_factory=dict)
    log_tail: str = ""
    checks: list[str] = Field(default_factory=list, description="the harness checks this evaluation ran")
    sandbox: str = Field(
        "", description="what confined the candidate's process (eval/launch/sandbox.py), or 'none: why'"
    )
    memory: str = Field("", description="cuda: the harness's device-memory plan per case (eval/worker/memory.py)")
    harness_peak_bytes: int | None = Field(
        None, description="cuda: peak device memory allocated while the harness prepared references and inputs"
    )
    review: list[str] = Field(default_factory=list, description="results worth a human look (very large speedups)")
    degraded: list[str] = Field(
        default_factory=list,
        description="guarantees this evaluation ran without, and why (GPU: the candidate in the judge's process)",
    )
    profile: dict[str, Any] | None = Field(
        None,
        description="cuda, correct and timed: triton (registers, spills, shared memory, warps, stages per compiled "
        "kernel), kernels and launches (torch.profiler, one forward call), ncu (metrics, or a note); "
        "eval/worker/profiling.py",
    )

    @computed_field
    @property
    def unreliable(self) -> str:
        """'' unless the judge's own measurements showed the host contended while it timed a case, or a case's calls
        were below what the judge resolves: then why the figures are unreliable, with the measured shortfall and
        spread (an `ok`'s speedup, an `inconclusive`'s times)."""
        busy = [c for c in self.cases if c.reliability.contention is not None and c.reliability.contention.contended]
        short = [f"{c.reliability.unresolved} ({_shape(c)})" for c in self.cases if c.reliability.unresolved]
        if not busy:
            return "; ".join(short)
        worst = max(busy, key=lambda c: (c.reliability.contention.shortfall or 0.0, c.reliability.contention.spread))
        return "; ".join(
            [
                f"a contended host: timed on {len(busy)} of {len(self.cases)} cases while "
                f"{worst.reliability.contention.describe()} ({_shape(worst)}); evaluate again on an idle machine",
                *short,
            ]
        )

    @computed_field
    @property
    def kernelbench_correct(self) -> bool | None:
        """KernelBench's verdict over the cases: correct on every case's given inputs; None where a case was not
        reached (an earlier failure, or a check before the comparison)."""
        verdicts = [c.accuracy.kernelbench_correct for c in self.cases]
        if not verdicts or None in verdicts:
            return False if False in verdicts else None
        return all(verdicts)

    def finalize(self) -> EvalResult:
        """Derive speedup and fitness from the cases; fitness is the speedup when correct, else 0."""
        self.correct = self.status is Status.OK
        cases = [c for c in self.cases if c.timed]  # CHECK_CASES are never timed
        timed = [c.speedup for c in cases if c.speedup]
        self.speedup = geomean(timed) if timed and len(timed) == len(cases) else None
        graphs = [c.speedup_graph for c in cases if c.speedup_graph]
        self.speedup_graph = geomean(graphs) if graphs and len(graphs) == len(cases) else None
        self.fitness = self.speedup if self.correct else 0.0
        return self

    def speedup_over(self, baseline: str) -> float | None:
        """Geometric mean, over the cases timed against `baseline` ("eager" or "compile"), of its time over the
        kernel's, whichever baseline fitness used; None when incorrect or never timed against it."""
        if not self.correct:
            return None
        times = [(c.timing.of(baseline).median_ms, c.timing.candidate.median_ms) for c in self.cases]
        ratios = [base / t for base, t in times if base and t]
        return geomean(ratios) if ratios else None


def _shape(case: CaseResult) -> str:
    return " ".join(f"{k}={v}" for k, v in case.shape.items()) or "the case"


def geomean(values: list[float]) -> float:
    return math.exp(sum(math.log(v) for v in values) / len(values))
