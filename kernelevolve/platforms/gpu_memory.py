"""Device memory per process, read through NVML from outside the processes that hold it.

The evaluator's process must never create a CUDA context (it would hold device memory the evaluations need), so
it cannot ask torch who holds the device; NVML answers without one. Used by the evaluator to say whose processes
held the device when an evaluation began (docs/harness.md, "Memory"), and by benchmarks/gpu_census.py.
Torch-free; None wherever NVML cannot answer (no NVIDIA driver, no `nvidia-ml-py`, a ROCm device).
"""

from __future__ import annotations

import os
import threading
from typing import Any

_lock = threading.Lock()
_nvml: Any = None  # the pynvml module once nvmlInit succeeded; False once it failed


def _library() -> Any:
    global _nvml
    with _lock:
        if _nvml is None:
            try:
                import pynvml

                pynvml.nvmlInit()
                _nvml = pynvml
            except Exception:  # noqa: BLE001 - no package, no driver, no device: NVML cannot answer here
                _nvml = False
        return _nvml or None


def _handle(nvml: Any, index: int) -> Any:
    """NVML's handle for CUDA's device `index`, through CUDA_VISIBLE_DEVICES (indices or UUIDs) where it is set."""
    visible = [v.strip() for v in os.environ.get("CUDA_VISIBLE_DEVICES", "").split(",") if v.strip()]
    if not visible:
        return nvml.nvmlDeviceGetHandleByIndex(index)
    entry = visible[index]
    if entry.isdigit():
        return nvml.nvmlDeviceGetHandleByIndex(int(entry))
    return nvml.nvmlDeviceGetHandleByUUID(entry)


def processes(index: int = 0) -> dict[int, int] | None:
    """{pid: bytes of device memory} of every process holding memory on CUDA device `index`, pids as this
    process's namespace sees them; None where NVML cannot answer."""
    nvml = _library()
    if nvml is None:
        return None
    try:
        handle = _handle(nvml, index)
        found: dict[int, int] = {}
        for proc in nvml.nvmlDeviceGetComputeRunningProcesses(handle):
            used = proc.usedGpuMemory
            # NVML reports "not available" as None or a huge sentinel: a process there holds an unknown amount.
            found[proc.pid] = found.get(proc.pid, 0) + (used if isinstance(used, int) and used < 1 << 60 else 0)
        return found
    except Exception:  # noqa: BLE001 - a driver that cannot list processes, an index past the devices
        return None


def device_memory(index: int = 0) -> tuple[int, int] | None:
    """(bytes used, bytes in all) on CUDA device `index`, or None."""
    nvml = _library()
    if nvml is None:
        return None
    try:
        info = nvml.nvmlDeviceGetMemoryInfo(_handle(nvml, index))
        return int(info.used), int(info.total)
    except Exception:  # noqa: BLE001
        return None
