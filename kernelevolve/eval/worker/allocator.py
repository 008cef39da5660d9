"""The worker's heap behaves the same whatever its history: glibc's mmap and trim thresholds fixed at the values
its adaptive rule reaches in a long-lived process.

With glibc's defaults the mmap threshold starts at 128 KB and rises as mmapped blocks are freed (to 32 MB at most),
the trim threshold with it: a young process hands a 12 MB temporary fresh pages on every call where an older one
reuses its heap. The judge split times the reference in the candidate's process, forked young; without this its
reference ran slower than the same reference in the worker (docs/benchmarks/harness.md). Fixed values switch the
adaptive rule off, so every worker and the process it forks time calls on a heap in the same state. Allocations
over the mmap threshold still page on every call, as in any long-lived process; the timer counts those faults.
"""

from __future__ import annotations

import ctypes
import ctypes.util

# glibc's mallopt parameters and the values its adaptive rule ends at on 64-bit (DEFAULT_MMAP_THRESHOLD_MAX; the
# trim threshold follows at twice the mmap threshold).
M_TRIM_THRESHOLD, M_MMAP_THRESHOLD = -1, -3
MMAP_THRESHOLD = 32 * 1024 * 1024
TRIM_THRESHOLD = 2 * MMAP_THRESHOLD


def fix_thresholds() -> bool:
    """Whether the thresholds were fixed (False off glibc, where there is no adaptive rule of this kind)."""
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or None)
        mallopt = libc.mallopt
    except (OSError, AttributeError):
        return False
    mallopt.argtypes, mallopt.restype = [ctypes.c_int, ctypes.c_int], ctypes.c_int
    return bool(mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD)) and bool(mallopt(M_TRIM_THRESHOLD, TRIM_THRESHOLD))
