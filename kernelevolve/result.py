"""The one result type of an evaluation, shared by every command (DESIGN.md "Evaluation result")."""

from __future__ import annotations

import math
from enum import Enum
from typing import Any

from pydantic import BaseModel, Field, computed_field


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


class CaseResult(BaseModel):
    """One shape case: correctness over all trials, then interleaved timings."""

    shape: dict[str, Any]
    correct: bool
    max_abs_err: float | None = None
    max_rel_err: float | None = None
    reason: str = ""
    trials: list[str] = Field(default_factory=list, description="input distribution of each trial run")
    t_candidate_ms: float | None = None
    t_eager_ms: float | None = None
    t_compile_ms: float | None = None
    t_candidate_iqr_ms: float | None = None
    t_eager_iqr_ms: float | None = None
    t_compile_iqr_ms: float | None = None
    timing_iters: int | None = None
    # The reference timed alone in the judge's own process, where the candidate has a process of its own: on the
    # cpu the timing cross-check bounds t_eager_ms (timed beside the candidate there) by it; on GPUs t_eager_ms and
    # t_compile_ms are the lower of the two processes' medians.
    t_eager_judge_ms: float | None = None
    # cpu: median minor page faults per timed call. Thousands mean the allocator handed each call fresh pages (an
    # output or temporary over glibc's mmap threshold), so the time includes faulting them in and zeroing them.
    candidate_faults_per_call: float | None = None
    eager_faults_per_call: float | None = None
    # CUDA-graph replay timings (launch overhead removed); null where capture failed or on the CPU.
    t_candidate_graph_ms: float | None = None
    t_eager_graph_ms: float | None = None
    t_compile_graph_ms: float | None = None
    # Host clock around call + whole-device synchronize (cuda): counts side-stream work and launch overhead.
    t_candidate_host_ms: float | None = None
    t_eager_host_ms: float | None = None
    t_compile_host_ms: float | None = None
    # Host time to issue the call while the device is busy (cuda): launch overhead, with no device wait in it.
    t_candidate_launch_ms: float | None = None
    t_eager_launch_ms: float | None = None
    t_compile_launch_ms: float | None = None
    # Host clock from the call's return to the device going idle (cuda): at most the call's own device time plus
    # the synchronize's latency, unless work ran where the events could not see it.
    t_candidate_tail_ms: float | None = None
    # The faster of calls on input contents the candidate had not seen before (the unseen-inputs check), timed
    # as t_candidate_host_ms on cuda and as t_candidate_ms on the cpu.
    t_candidate_unseen_ms: float | None = None
    t_eager_tail_ms: float | None = None
    t_compile_tail_ms: float | None = None
    # The roofline: bytes every input and output take to move once, and (GPU targets, from the device's peaks)
    # the least time the hardware needs for them and any declared FLOPs.
    min_bytes: int | None = None
    t_roofline_ms: float | None = None
    # Whether the bytes (not the FLOPs) set that floor, and min_bytes at the device's measured bandwidth: a
    # kernel's share of the measured HBM bandwidth is t_bytes_ms / t_candidate_ms.
    memory_bound: bool | None = None
    t_bytes_ms: float | None = None
    # With copy_floor: `dst.copy_(src)` of min_bytes (half read, half written), timed in the same interleaved loop:
    # what "bound by memory" costs at this size on this device, launch and ramp-up included.
    t_copy_ms: float | None = None
    speedup: float | None = None
    speedup_graph: float | None = None
    compile_baseline_correct: bool | None = None
    norm_err: float | None = Field(None, description="largest ||out - ref||_2 / ||ref||_2 over the trials")
    ref_max_abs: float | None = Field(None, description="largest |ref| over the trials (finite values)")
    atol: float | None = Field(
        None, description="the fixed tolerance: the rule, or the fallback of a trial without an oracle"
    )
    rtol: float | None = None
    correctness: str = Field("", description="the rule the case was judged by (eval/worker/correctness.Criterion)")
    error_ratio: float | None = Field(
        None, description="measured rule: the largest error over the reference's own rounding error, over the trials"
    )
    kernelbench_correct: bool | None = Field(
        None, description="KernelBench's verdict (atol = rtol = 1e-2) on the given inputs; None: not reached"
    )
    contention: HostContention | None = Field(None, description="the host as the judge measured it (timed cases)")
    unresolved: str = Field(
        "",
        description="cpu: why the candidate's time is the judge's bound, not its report (a call below what the "
        "judge resolves around a request)",
    )
    timed: bool = Field(True, description="False: one of the problem's CHECK_CASES, judged for correctness alone")


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
        busy = [c for c in self.cases if c.contention is not None and c.contention.contended]
        short = [f"{c.unresolved} ({_shape(c)})" for c in self.cases if c.unresolved]
        if not busy:
            return "; ".join(short)
        worst = max(busy, key=lambda c: (c.contention.shortfall or 0.0, c.contention.spread))
        return "; ".join(
            [
                f"a contended host: timed on {len(busy)} of {len(self.cases)} cases while "
                f"{worst.contention.describe()} ({_shape(worst)}); evaluate again on an idle machine",
                *short,
            ]
        )

    @computed_field
    @property
    def kernelbench_correct(self) -> bool | None:
        """KernelBench's verdict over the cases: correct on every case's given inputs; None where a case was not
        reached (an earlier failure, or a check before the comparison)."""
        verdicts = [c.kernelbench_correct for c in self.cases]
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
        times = [(c.t_compile_ms if baseline == "compile" else c.t_eager_ms, c.t_candidate_ms) for c in self.cases]
        ratios = [base / t for base, t in times if base and t]
        return geomean(ratios) if ratios else None


def _shape(case: CaseResult) -> str:
    return " ".join(f"{k}={v}" for k, v in case.shape.items()) or "the case"


def geomean(values: list[float]) -> float:
    return math.exp(sum(math.log(v) for v in values) / len(values))
