"""A platform is a "hardware interpreter": what a target runs, how its worker is set up, how it is timed, how its
memory is planned and read, and which checks and baselines exist there.

Everything that differs between targets is a method here, implemented once per target (`cpu.py`, `cuda.py`,
`rocm.py`); the rest of the package asks its platform instead of testing the device's type. Methods on the
parent's side never import torch (the evaluator's process must not); the worker's side imports it where it runs.
Adding a target is one module plus a `register` call: docs/platforms.md.
"""

from __future__ import annotations

import os
from abc import ABC, abstractmethod
from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import torch


def cache_dir() -> Path:
    """Where compiled extensions and measured device peaks persist between evaluations."""
    root = os.environ.get("KERNELEVOLVE_CACHE") or os.path.join(
        os.environ.get("XDG_CACHE_HOME", os.path.expanduser("~/.cache")), "kernelevolve"
    )
    return Path(root)


class DeviceMissing(RuntimeError):
    """The target's device is not there for torch (a GPU target on a machine without one)."""


@dataclass(frozen=True)
class Platform(ABC):
    name: str
    device_type: str  # the torch device type its kernels run on
    languages: tuple[str, ...]  # kernel languages a candidate may use here
    interpreted: tuple[str, ...] = ()  # languages that run correctly but are not timed (Triton on cpu)
    compile_baseline: bool = False  # whether the torch.compile baseline is timed by default
    env: dict[str, str] = field(default_factory=dict)  # set in the worker before torch is imported
    note: str = ""
    archs: tuple[str, ...] = ()  # the knowledge base's architecture words this target may be (agents/retrieval.py)
    retrieval_words: str = ""  # words that find this target's documents in the knowledge base
    seeds: tuple[str, ...] = ("seed.py",)  # a suite's seed kernel files, tried in this order (suites/bench.py)

    def worker_env(self) -> dict[str, str]:
        return dict(self.env)

    def unsupported(self, languages: list[str]) -> list[str]:
        return [lang for lang in languages if lang not in self.languages]

    def is_interpreted(self, languages: list[str]) -> bool:
        return any(lang in self.interpreted for lang in languages)

    # ---- the parent's side: no torch import ----

    @abstractmethod
    def present(self) -> bool:
        """Whether this machine has the target's device (its driver loaded; no torch import)."""

    @abstractmethod
    def separate_device(self) -> bool:
        """Whether kernels run on a device apart from the host: its own memory (planned, shared between processes
        by handles, held by other processes), its own clock (timed by events) and its own checks (roofline,
        launches, profiling). False where the host runs them: the worker's host memory is capped instead."""

    def candidate_in_judge(self) -> bool:
        """Whether the candidate runs in the judge's own process (the judge split turned off for this target)."""
        return False

    def spare_workers(self) -> int:
        """How many workers an evaluator keeps started ahead of the jobs."""
        return 1

    def kernel_policy_default(self) -> bool:
        """Whether a candidate must launch a kernel of its own by default: on where kernels run on a device of
        their own (cuda, rocm), where a kernel is the point; off on the host, where PyTorch-level rewrites are a
        fair starting point for a search."""
        return self.separate_device()

    def device_label(self, device_name: str, machine: str) -> str:
        """What a result's environment names as the device: the GPU's model, or the host's machine."""
        return device_name if self.separate_device() else machine

    # ---- the worker's side: torch imported where it runs ----

    @abstractmethod
    def open_device(self, index: int) -> torch.device:
        """The device a job runs on, made current; raises DeviceMissing where torch cannot see it."""

    def current_device(self, index: int | None = None) -> torch.device | None:
        """This target's device `index` (torch's current one where None) where torch can use it; None where it
        cannot, and on the host."""
        return None

    def usable(self) -> bool:
        """Whether torch can run kernels on this target's device in this process."""
        return True

    def build_arch(self) -> str:
        """The device architecture extensions are compiled for (TORCH_CUDA_ARCH_LIST's "9.0"); "" without one."""
        return ""

    def initialized(self) -> bool:
        """Whether this process has made a context on the device (a forked child could not use it)."""
        return False

    def synchronizer(self) -> Callable[..., None]:
        """A function that waits for the device's queued work (taken now: a candidate re-binding torch's names
        later cannot change it); a no-op where calls return when their work is done."""
        return _nothing

    def synchronize(self, device: torch.device) -> None:
        self.synchronizer()(device)

    def event_factory(self) -> Any:
        """The device's timing-event class (taken now, as `synchronizer`), or None where the host clock times."""
        return None

    def spin(self, cycles: int) -> None:
        """Queue `cycles` of busy work on the device, so that what is queued next starts without waiting for the
        host (timing.py's lead); nothing off a device."""
        return None

    def capture(self, call: Callable[[], Any], device: torch.device, warm_ups: int = 2) -> tuple[Any, Any]:
        """A replayable graph of one run of `call` and what that run returned; raises where it cannot be made."""
        raise RuntimeError(f"no graph capture on the {self.name} target")

    def device_name(self, device: torch.device) -> str:
        """The device's model (the peaks cache's key)."""
        import platform

        return platform.processor() or platform.machine()

    def build_versions(self) -> dict[str, str]:
        """The device toolkit's version, for a result's environment ({} on the host)."""
        return {}

    def device_count(self) -> None:
        """Read the device count now, where torch caches it on first use (before the integrity fingerprints)."""
        return None

    def set_device(self, device: torch.device) -> None:
        """Make `device` the current one for torch and the kernel libraries."""
        return None

    def device_events(self, call: Callable[[], Any], device: torch.device) -> list[tuple[str, float]] | None:
        """(name, device microseconds) of every device operation one call runs, in order; None where it cannot be
        profiled (eval/worker/launches.py)."""
        return None

    def profiled(self) -> AbstractContextManager[None]:
        """The window an external profiler (Nsight Compute) records; nothing off a device."""
        return _no_window()

    # memory: the device's, read through torch's caching allocator where there is one
    def free_bytes(self, device: torch.device) -> int:
        """Free device memory, counting blocks the caching allocator holds unused."""
        raise RuntimeError(f"the {self.name} target has no device memory of its own")

    def others_bytes(self, device: torch.device) -> tuple[int, int]:
        """(bytes of the device in use outside this process's allocator, the device's total)."""
        raise RuntimeError(f"the {self.name} target has no device memory of its own")

    def held_and_free(self, device: torch.device) -> tuple[int, int, int]:
        """(bytes this process's allocator holds, free bytes, total bytes) of the device."""
        raise RuntimeError(f"the {self.name} target has no device memory of its own")

    def cached_bytes(self, device: torch.device) -> tuple[int, int]:
        """(bytes the allocator has reserved, bytes of it allocated)."""
        return 0, 0

    def reset_peak_memory(self, device: torch.device) -> None:
        """Start the allocator's peak count afresh."""
        return None

    def peak_memory(self, device: torch.device) -> int | None:
        """The allocator's peak since `reset_peak_memory`, or None where there is none."""
        return None

    def empty_cache(self) -> None:
        """Give the allocator's unused blocks back to the device."""
        return None

    def memory_pool(self) -> Any:
        """A private pool that tensors shared with another process are copied into, or None on the host (shared
        as files instead: eval/worker/shared.py)."""
        return None

    def use_memory_pool(self, pool: Any) -> AbstractContextManager[None]:
        """Allocations in this block come from `pool`."""
        return _no_window()


def _nothing(*args: Any) -> None:
    return None


class _no_window(AbstractContextManager[None]):
    def __exit__(self, *exc: object) -> None:
        return None


__all__ = ["DeviceMissing", "Platform", "cache_dir"]
