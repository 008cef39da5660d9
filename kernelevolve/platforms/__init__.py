"""Targets by name, the registry a new target joins, and which one to use by default (docs/platforms.md).

A target is a `Platform` (base.py) registered under its name. The three built in register here; another joins
with `register(...)` in a module of its own, named in KERNELEVOLVE_PLATFORMS (comma-separated module names,
imported when this package is, in the parent and the worker alike: the variable reaches the worker)."""

from __future__ import annotations

import importlib
import os
from typing import TYPE_CHECKING

from kernelevolve.platforms.base import Platform
from kernelevolve.platforms.cpu import CPU
from kernelevolve.platforms.cuda import CUDA
from kernelevolve.platforms.rocm import ROCM

if TYPE_CHECKING:
    import torch

PLUGINS_ENV = "KERNELEVOLVE_PLATFORMS"
PLATFORMS: dict[str, Platform] = {}
_active: list[Platform] = []  # the worker's target, once its job has come (`activate`)


def register(platform: Platform) -> Platform:
    """Add a target (or replace one of the same name); returns it, so a module can write X = register(...)."""
    if not isinstance(platform, Platform):
        raise TypeError(f"register() takes a Platform, not {type(platform).__name__}")
    PLATFORMS[platform.name] = platform
    return platform


def get_platform(name: str) -> Platform:
    try:
        return PLATFORMS[name]
    except KeyError:
        raise ValueError(f"unknown target {name!r}: choose one of {', '.join(PLATFORMS)}") from None


def activate(name: str) -> Platform:
    """The worker's target for this process: `for_device` answers with it for devices of its type."""
    platform = get_platform(name)
    _active[:] = [platform]
    return platform


def for_device(device: torch.device) -> Platform:
    """The platform of a torch device: the active target where its device type matches, else the first
    registered target of that device type (cpu for the host, cuda for a "cuda" device)."""
    for platform in (*_active, *PLATFORMS.values()):
        if platform.device_type == device.type:
            return platform
    raise ValueError(f"no target runs on torch's {device.type!r} device")


def accelerator(index: int | None = None) -> torch.device | None:
    """The first registered target's device that torch can use here (`index`, or the current one), or None: the
    device an out-of-memory error in the worker is read against."""
    return next((d for p in PLATFORMS.values() if (d := p.current_device(index)) is not None), None)


def device_initialized() -> bool:
    """Whether any target's device has a context in this process."""
    return any(p.initialized() for p in PLATFORMS.values())


def hosted(target: str) -> bool:
    """Whether a target (by name; False for one not registered here) runs its kernels on the host."""
    return target in PLATFORMS and not PLATFORMS[target].separate_device()


def device_present(target: str) -> bool:
    """Whether this machine has the target's device driver loaded (no torch import): the cpu always."""
    return get_platform(target).present()


def default_target() -> str:
    """cuda where an NVIDIA driver is loaded, rocm where the AMD kernel driver is, else cpu (no torch import)."""
    return next((t for t in ("cuda", "rocm") if device_present(t)), "cpu")


def _load_plugins() -> None:
    for module in filter(None, (m.strip() for m in os.environ.get(PLUGINS_ENV, "").split(","))):
        try:
            importlib.import_module(module)
        except ImportError as e:
            raise ImportError(f"{PLUGINS_ENV} names {module!r}, which cannot be imported: {e}") from e


for _builtin in (CPU, CUDA, ROCM):
    register(_builtin)
_load_plugins()

__all__ = [
    "PLATFORMS",
    "Platform",
    "accelerator",
    "activate",
    "default_target",
    "device_initialized",
    "device_present",
    "for_device",
    "get_platform",
    "hosted",
    "register",
]
