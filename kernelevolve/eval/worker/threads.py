"""Threads a candidate leaves behind. Work done on a thread after forward returns escapes the timer (and can slow
the baseline timed next), so a candidate may not leave a Python thread alive, or a native thread busy, after a
call. Thread pools that go idle (OpenMP's, started by a candidate's first parallel region) are allowed.
"""

from __future__ import annotations

import os
import threading
import time

PROC_TASKS = "/proc/self/task"
# A GNU OpenMP worker spins for a few ms after a parallel region before it sleeps, an LLVM/Intel one for up to
# 200 ms (KMP_BLOCKTIME): a thread counts as working only if it is still busy after each of these settles.
SETTLES_S = (0.015, 0.1, 0.25)
WINDOW_S = 0.025  # busy: on a CPU for over a quarter of this window (a busy machine may give a working thread
BUSY_SHARE = 0.25  # less than a whole core; an idle pool thread takes none)


def _tasks() -> set[int]:
    try:
        return {int(t) for t in os.listdir(PROC_TASKS)}
    except OSError:  # not Linux: Python threads are still checked
        return set()


def _cpu_ns(tid: int) -> int:
    try:
        with open(f"{PROC_TASKS}/{tid}/schedstat") as f:
            return int(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        return 0


def _no_progress_monitor() -> None:
    """tqdm starts a monitor thread with its first bar and keeps it while a bar lives: a library's progress bar
    in the candidate's process (beside the baselines timed there) would leave one after a candidate's call."""
    try:
        import tqdm
    except ImportError:
        return
    tqdm.tqdm.monitor_interval = 0


class ThreadWatch:
    """Taken before the candidate loads: the threads that are the harness's own (tqdm's monitor turned off)."""

    def __init__(self) -> None:
        _no_progress_monitor()
        self.python = {t.ident for t in threading.enumerate()}
        self.native = _tasks()
        self.count = threading.active_count()
        self.me = threading.get_native_id()

    def python_left(self) -> str:
        """Cheap enough for every call: '' unless a Python thread the candidate started is still alive."""
        if threading.active_count() <= self.count:
            return ""
        new = [t.name for t in threading.enumerate() if t.ident not in self.python and t.is_alive()]
        return f"the candidate left Python thread(s) running: {', '.join(new[:3])}" if new else ""

    def native_busy(self) -> str:
        """'' unless a native thread started since the watch began keeps working after the call returned."""
        busy = _tasks() - self.native - {self.me}
        settled = 0.0
        for settle in SETTLES_S:  # the common case, an idle pool or no new thread, costs one settle and window
            if not busy:
                return ""
            time.sleep(settle - settled)
            before = {t: _cpu_ns(t) for t in busy}
            time.sleep(WINDOW_S)
            settled = settle + WINDOW_S
            busy = {t for t in busy if _cpu_ns(t) - before[t] > WINDOW_S * BUSY_SHARE * 1e9}
        if not busy:
            return ""
        return f"{len(busy)} native thread(s) started by the candidate kept running for {settled:.2f} s"

    def check(self) -> str:
        return self.python_left() or self.native_busy()
