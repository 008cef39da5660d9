"""The contract between the evaluator and its worker processes, torch-free and importing nothing of the package:
the job (`EvalJob`) and its options (`EvalOptions`, the one vocabulary the CLI, the search and the worker take
their words from), the worker's environment names, the events on its pipe, and a forked worker's spec with its
confinement (docs/architecture.md).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from enum import Enum
from typing import Any, Literal

from pydantic import BaseModel

BASELINES = ("eager", "compile")
PROFILES = ("off", "auto", "ncu")
Baseline = Literal["eager", "compile"]
Profile = Literal["off", "auto", "ncu"]
CORRECTNESS = ("measured", "kernelbench")
Correctness = Literal["measured", "kernelbench"]
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
    correctness: Correctness = "measured"  # the rule outputs are judged by (eval/rules.py)
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


# What the evaluator tells a worker through its environment (read by eval/worker/main.py).
RESULT_FD_ENV = "KERNELEVOLVE_RESULT_FD"
MEMORY_LIMIT_ENV = "KERNELEVOLVE_MEMORY_LIMIT_BYTES"
# GPU targets: `split` (the default) runs the candidate in a process of its own, beside the judge, as on the cpu
# target always; `in-process` runs it in the judge's process (docs/harness.md).
GPU_JUDGE_ENV = "KERNELEVOLVE_GPU_JUDGE"
GPU_JUDGE_MODES = ("split", "in-process")
DEVICE_ENV = "KERNELEVOLVE_GPU_INDEX"  # set for GPU targets: the device to initialise before the job
LIFELINE_ENV = "KERNELEVOLVE_LIFELINE_FD"  # a pipe the evaluator holds open: its end means the evaluator is gone
STAGE_LINE = "[kernelevolve worker] "  # begins each stage line the worker writes to its log
BUILD_FDS_ENV = "KERNELEVOLVE_BUILD_FDS"  # "REQUEST_FD,REPLY_FD": the pipes to the parent's build service


def gpu_judge_split(env: Mapping[str, str] = os.environ) -> bool:
    """Whether GPU workers run the candidate in a process of its own; raises ValueError for a value of
    KERNELEVOLVE_GPU_JUDGE that is neither mode."""
    mode = env.get(GPU_JUDGE_ENV) or "split"
    if mode not in GPU_JUDGE_MODES:
        raise ValueError(f"{GPU_JUDGE_ENV}={mode!r}: choose one of {', '.join(GPU_JUDGE_MODES)} (unset: split)")
    return mode == "split"


class Event(str, Enum):
    """The events a worker writes on its pipe (one JSON object per line, `{"event": ...}`)."""

    READY = "ready"  # started, waiting for its job ("t": the monotonic time)
    STAGE = "stage"  # a stage began ("stage", "t")
    TRUSTED_DONE = "trusted_done"  # phase A is over: the evaluator keeps its cache writes, then says go on
    RESULT = "result"  # the result ("result": an EvalResult)
    PROBLEM_ERROR = "problem_error"  # the problem itself is malformed ("message")
    HARNESS_LIMIT = "harness_limit"  # the harness ran out of a resource ("message")
    ERROR = "error"  # the worker failed ("message")


@dataclass(frozen=True)
class Confinement:
    """What confines one process: the folders left writable, the caches seen through private overlays
    ((cache, base of its layers)), the memory cgroups to join, whether its minimal /dev holds the GPU's nodes,
    whether it then takes an unprivileged uid in a user namespace of its own (eval/launch/confine.py)."""

    writable: tuple[str, ...]
    overlays: tuple[tuple[str, str], ...] = ()
    cages: tuple[str, ...] = ()
    gpu: bool = False
    user: bool = False

    def args(self) -> list[str]:
        """This module's command-line options for it."""
        caged = [arg for cage in self.cages for arg in ("--cgroup", cage)]
        rw = [arg for folder in self.writable for arg in ("--rw", folder)]
        over = [arg for lower, base in self.overlays for arg in ("--overlay", f"{lower}={base}")]
        flags = [flag for flag, on in (("--gpu", self.gpu), ("--user", self.user)) if on]
        return [*caged, *rw, *over, *flags]

    @classmethod
    def parse(cls, options: list[str]) -> Confinement:
        def values(flag: str) -> list[str]:
            return [options[i + 1] for i, o in enumerate(options[:-1]) if o == flag]

        overlays = []
        for value in values("--overlay"):
            lower, _, base = value.partition("=")
            overlays.append((lower, base))
        return cls(
            tuple(values("--rw")), tuple(overlays), tuple(values("--cgroup")), "--gpu" in options, "--user" in options
        )


@dataclass(frozen=True)
class Spec:
    """One worker as the parent asks for it: its whole environment, the descriptor number each passed descriptor
    takes (0, 1 and 2 among them), its working folder, whether it gets the sandbox's namespaces, and its
    confinement there (None where the file system cannot be confined)."""

    env: dict[str, str]
    targets: list[int]
    cwd: str
    namespaces: bool
    confinement: Confinement | None

    def to_json(self) -> dict[str, Any]:
        c = self.confinement
        confined = (
            None
            if c is None
            else {"writable": c.writable, "overlays": c.overlays, "cages": c.cages, "gpu": c.gpu, "user": c.user}
        )
        return {
            "env": self.env,
            "targets": self.targets,
            "cwd": self.cwd,
            "namespaces": self.namespaces,
            "confinement": confined,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Spec:
        c = data.get("confinement")
        confined = None
        if c is not None:
            overlays = tuple((str(lo), str(b)) for lo, b in c["overlays"])
            flags = bool(c.get("gpu")), bool(c.get("user"))
            confined = Confinement(tuple(c["writable"]), overlays, tuple(c["cages"]), *flags)
        env = {str(k): str(v) for k, v in data["env"].items()}
        return cls(env, [int(t) for t in data["targets"]], str(data["cwd"]), bool(data["namespaces"]), confined)
