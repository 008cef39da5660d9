"""What the parent asks a worker to do: one candidate against one problem (torch-free, parent side).

`EvalOptions` is the one vocabulary of evaluation options: the CLI's choices, the search's configuration and
the worker's job all take their words from here.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Literal

from pydantic import BaseModel

BASELINES = ("eager", "compile")
PROFILES = ("off", "auto", "ncu")
Baseline = Literal["eager", "compile"]
Profile = Literal["off", "auto", "ncu"]
CORRECTNESS = ("measured", "kernelbench")
# The measured rule: an output's error against float64 may reach this multiple of the reference's own rounding error.
BUDGET_MULTIPLE = 16.0
Correctness = Literal["measured", "kernelbench"]
CORRECTNESS_HELP = (
    f"measured: within {BUDGET_MULTIPLE:g}x the reference's own rounding error plus one ulp against a float64 run, "
    "on several input distributions; kernelbench: atol = rtol = 1e-2 on get_inputs(), as KernelBench's evaluator"
)
TF32_HELP = "allow TF32 in float32 problems: the reference and baseline run with TF32 on, and the budget follows"
PROFILE_HELP = "cuda: off, auto (Triton metadata, torch profiler) or ncu (also Nsight Compute, needs ncu on PATH)"


@dataclass(frozen=True)
class EvalOptions:
    """How one candidate is evaluated, beside which problem and target."""

    trials: int = 3  # correctness trials with fresh inputs per shape case
    baseline: Baseline = "eager"  # what fitness uses
    compile_baseline: bool | None = None  # time torch.compile; None: the platform's default
    profile: Profile = "auto"  # "off" | "auto" (cuda: Triton metadata + torch.profiler) | "ncu" (also Nsight Compute)
    copy_floor: bool = False  # also time a device copy of each case's minimum bytes, interleaved with the rest
    require_kernel: bool | None = None  # the kernel policy; None: the platform's default
    timed: bool = True  # False: correctness only (check-problem's probes)
    timing_sets: int = 3  # distinct input sets the timer rotates over
    max_iters: int = 100
    budget_s: float = 1.0  # timing budget per function per case
    correctness: Correctness = "measured"  # the rule outputs are judged by (CORRECTNESS_HELP)
    allow_tf32: bool = False  # float32 problems: TF32 matmuls allowed, in the reference and baseline too

    def __post_init__(self) -> None:
        if self.correctness not in CORRECTNESS:
            raise ValueError(f"correctness must be one of {', '.join(CORRECTNESS)}, not {self.correctness!r}")
        if self.baseline not in BASELINES:
            raise ValueError(f"baseline must be one of {', '.join(BASELINES)}, not {self.baseline!r}")
        if self.profile not in PROFILES:
            raise ValueError(f"profile must be one of {', '.join(PROFILES)}, not {self.profile!r}")
        if self.trials < 1:
            raise ValueError(f"trials must be at least 1, not {self.trials}")

    def fields(self) -> dict:
        return asdict(self)


class EvalJob(BaseModel):
    problem_path: str
    candidate_path: str
    target: str
    seed: int  # drawn by the parent per evaluation; every input and parameter seed derives from it
    trials: int = 3
    baseline: str = "eager"
    compile_baseline: bool = True
    device_index: int = 0
    timing_sets: int = 3
    max_iters: int = 100
    budget_s: float = 1.0
    timed: bool = True
    require_kernel: bool | None = None
    profile: str = "auto"
    copy_floor: bool = False
    correctness: str = "measured"
    allow_tf32: bool = False
    build_only: bool = False  # import the candidate (building its extensions into the cache), judge nothing
    # GPU: who else held the device as the job went out, {role: [processes, bytes]} (eval/holders.py); None where
    # the evaluator could not read NVML
    holders: dict[str, list[int]] | None = None
