"""L2 persistence (NVIDIA, compute capability 8.0+): a candidate that sets a persisting-L2 carve-out and an access
policy window keeps its data in L2 across the timer's flush. The timer resets persisting lines before every
flush; the harness rejects a candidate that leaves a persisting carve-out set. Through the CUDA runtime that
torch loaded (ctypes); a no-op where there is none (cpu, ROCm). Untested on CPU-only machines.
"""

from __future__ import annotations

import ctypes
from typing import Any

import torch

_LIMIT_PERSISTING_L2 = 0x06  # cudaLimitPersistingL2CacheSize


def _load() -> Any:
    """Loaded once at import, before any candidate: the harness's integrity check covers this module."""
    if not torch.version.cuda:
        return None
    for name in ("libcudart.so.12", "libcudart.so.13", "libcudart.so.11.0", "libcudart.so"):
        try:
            return ctypes.CDLL(name)
        except OSError:
            continue
    return None


_CUDART = _load()


def _runtime() -> Any:
    return _CUDART


def reset() -> None:
    """Demote every persisting line to normal, so the next flush evicts it."""
    rt = _runtime()
    if rt is not None:
        rt.cudaCtxResetPersistingL2Cache()


def clear_limit() -> None:
    rt = _runtime()
    if rt is not None:
        rt.cudaDeviceSetLimit(ctypes.c_int(_LIMIT_PERSISTING_L2), ctypes.c_size_t(0))


def persisting_bytes() -> int:
    """The persisting-L2 carve-out currently set (0 where none or no CUDA runtime)."""
    rt = _runtime()
    if rt is None:
        return 0
    value = ctypes.c_size_t(0)
    if rt.cudaDeviceGetLimit(ctypes.byref(value), ctypes.c_int(_LIMIT_PERSISTING_L2)) != 0:
        return 0
    return int(value.value)
