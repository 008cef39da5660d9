"""What a stored verdict depends on beyond the source: the harness that judged it, the torch and Triton that ran it,
the device it ran on. A result is reused (never evaluated twice) only where all of them are this machine's: a
verdict from an older harness, another torch or another GPU says nothing certain about this one. Torch-free: the
parent computes the same fingerprint the worker records in `versions`."""

from __future__ import annotations

import functools
import hashlib
import importlib.metadata
import platform as pyplatform
from pathlib import Path
from typing import Any

from kernelevolve.platforms import get_platform
from kernelevolve.platforms.peaks import public_version

PACKAGE = Path(__file__).resolve().parents[1]
# The code a verdict comes from: the worker's checks and timer, the job and result types, how inputs are drawn.
HARNESS_FILES = ("eval/worker/*.py", "eval/wire.py", "result.py", "problem/inputs.py", "problem/problem.py")


@functools.cache
def harness_version() -> str:
    digest = hashlib.sha256()
    for pattern in HARNESS_FILES:
        for path in sorted(PACKAGE.glob(pattern)):
            digest.update(path.relative_to(PACKAGE).as_posix().encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()[:16]


def _installed(name: str) -> str:
    try:
        return public_version(importlib.metadata.version(name))
    except importlib.metadata.PackageNotFoundError:
        return ""


def current(target: str, device_name: str = "") -> dict[str, str]:
    """This machine's environment for `target`; device_name: the GPU's name where known ("" skips the device)."""
    env = {"harness": harness_version(), "torch": _installed("torch"), "triton": _installed("triton")}
    env["device"] = get_platform(target).device_label(device_name, pyplatform.machine())
    return env


def of(platform: Any) -> dict[str, str]:
    """The environment an evaluator of `platform` judges in (the GPU's name from the device's facts)."""
    from kernelevolve.platforms.facts import device_facts

    name = device_facts(platform.name).name if platform.separate_device() else ""
    return current(platform.name, name)


def matches(versions: dict[str, Any], device: str, env: dict[str, str]) -> bool:
    """Whether a stored result (its `versions` and `device`) was judged in this environment."""
    if versions.get("harness") != env["harness"] or public_version(str(versions.get("torch", ""))) != env["torch"]:
        return False
    triton = versions.get("triton")
    if triton and env["triton"] and public_version(str(triton)) != env["triton"]:
        return False
    return not env["device"] or device == env["device"]
