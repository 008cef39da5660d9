"""Targets by name, and which one to use by default."""

from __future__ import annotations

import os

from kernelevolve.platforms.base import Platform
from kernelevolve.platforms.cpu import CPU
from kernelevolve.platforms.cuda import CUDA
from kernelevolve.platforms.rocm import ROCM

PLATFORMS: dict[str, Platform] = {p.name: p for p in (CPU, CUDA, ROCM)}


def get_platform(name: str) -> Platform:
    try:
        return PLATFORMS[name]
    except KeyError:
        raise ValueError(f"unknown target {name!r}: choose one of {', '.join(PLATFORMS)}") from None


def device_present(target: str) -> bool:
    """Whether this machine has the target's device driver loaded (no torch import): the cpu always."""
    if target == "cuda":
        return os.path.exists("/proc/driver/nvidia/version") or os.path.exists("/dev/nvidiactl")
    if target == "rocm":
        return os.path.exists("/dev/kfd")
    return True


def default_target() -> str:
    """cuda where an NVIDIA driver is loaded, rocm where the AMD kernel driver is, else cpu (no torch import)."""
    return next((t for t in ("cuda", "rocm") if device_present(t)), "cpu")


__all__ = ["PLATFORMS", "Platform", "default_target", "device_present", "get_platform"]
