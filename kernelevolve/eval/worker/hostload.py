"""Whether the host gave the timed process its CPUs. On the cpu target the timer is the host clock: when more
threads are runnable than there are cores (a parallel test run, a build, another user, or a candidate that starts
too many threads), the candidate's threads wait in the run queue and every configuration of a kernel measures
alike. Linux counts each thread's wait (schedstat); a case whose timing waited for a CPU over a tenth of its wall
time is listed for review rather than silently trusted. The worker runs in a session of its own, and Linux's
autogroup scheduling gives each session a fair share of the cores, so other sessions' work shows here only where the
candidate's threads need more than that share.
"""

from __future__ import annotations

import os
import time

PROC = "/proc"
WAIT_REVIEW = 0.1  # waited for a CPU over this share of the timing's wall time (summed over threads): listed


def sched_ns(pid: int | str) -> tuple[int, int] | None:
    """(ns on a CPU, ns waiting for one) of every thread of a process so far (schedstat); None where the process
    is gone or the kernel does not report it. The one reader of schedstat (contention.py uses it too)."""
    try:
        tasks = os.listdir(f"{PROC}/{pid}/task")
    except OSError:
        return None
    run = wait = 0
    for t in tasks:
        try:
            with open(f"{PROC}/{pid}/task/{t}/schedstat") as f:
                fields = f.read().split()
            run, wait = run + int(fields[0]), wait + int(fields[1])
        except (OSError, ValueError, IndexError):
            continue  # a thread that ended meanwhile
    return run, wait


def _waited_ns(pids: list[int] | None = None) -> int | None:
    """Run-queue wait so far of every thread of this process and of `pids` (the candidate's own process, where
    the cpu target times); None where the kernel does not report it."""
    own = sched_ns("self")
    if own is None:
        return None
    return own[1] + sum((sched_ns(pid) or (0, 0))[1] for pid in pids or [])


class RunQueueWait:
    """Started before a case's timing; `note()` after it says whether the host kept the threads waiting."""

    def __init__(self, pids: list[int] | None = None) -> None:
        self.pids = list(pids or [])
        self.waited = _waited_ns(self.pids)
        self.t0 = time.perf_counter()

    def share(self) -> float | None:
        now = _waited_ns(self.pids)
        wall = time.perf_counter() - self.t0
        if self.waited is None or now is None or wall <= 0:
            return None
        return max(0, now - self.waited) / 1e9 / wall

    def note(self) -> str:
        share = self.share()
        if share is None or share <= WAIT_REVIEW:
            return ""
        return (
            f"threads waited for a CPU {share:.0%} of the timed wall time (more runnable threads than the "
            f"{os.cpu_count()} cores): host-clocked times are unreliable; time on an idle machine, with "
            "OMP_NUM_THREADS at most the free cores"
        )
