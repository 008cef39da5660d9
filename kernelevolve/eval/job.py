"""What the parent asks a worker to do: one candidate against one problem (torch-free, parent side)."""

from __future__ import annotations

from pydantic import BaseModel


class EvalJob(BaseModel):
    problem_path: str
    candidate_path: str
    target: str
    seed: int  # drawn by the parent per evaluation; every input and parameter seed derives from it
    trials: int = 3
    baseline: str = "eager"  # what fitness uses: "eager" | "compile"
    compile_baseline: bool = True
    device_index: int = 0
    timing_sets: int = 3  # distinct input sets the timer rotates over
    max_iters: int = 100
    budget_s: float = 1.0  # timing budget per function per case
    timed: bool = True  # False: correctness only (check-problem's probes)
    require_kernel: bool | None = None  # the kernel policy; None: the platform's default
    profile: str = "auto"  # "off" | "auto" (cuda: Triton metadata + torch.profiler) | "ncu" (also Nsight Compute)
    copy_floor: bool = False  # also time a device copy of each case's minimum bytes, interleaved with the rest
