"""Whether the host was contended while the judge measured: the one definition every verdict and report uses
(docs/harness.md, "A busy host").

The judge times the reference in its own process, in looks of a few calls each, while the candidate's process has
no request to serve. Its own measurements over that window say whether the host gave it its CPUs: its threads'
time on a CPU and waiting for one (Linux's schedstat), hence the share of the CPU it wanted that it did not get,
and the CPU time the candidate's processes took meanwhile (idle, an honest candidate takes none: the worker's
OpenMP wait policy is passive). The host is contended where the judge was denied over a quarter of the CPU it
wanted while the candidate stayed idle; the spread of the looks' medians is reported with it. A candidate that
spins while the judge measures makes the judge wait too; its CPU time then shows, and the contention counts as
its own: the verdict stands.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable

from kernelevolve.eval.worker.checking import CandidateFailure
from kernelevolve.eval.worker.hostload import PROC, sched_ns
from kernelevolve.result import HostContention, Status

# The threshold (docs/harness.md, "A busy host", has the measurements): of the CPU the judge's timing wanted (one
# CPU, or less where its threads wanted less), the share the host denied it. Linux gives each session its share
# of the cores (autogroups): CI's own load (two test processes on two cores) leaves the judge at least one CPU
# (none denied), a busy process on every core of two leaves it two thirds (a third denied), or half with a test
# process beside them; past a quarter denied, each wall-clock time is over 1.33x the CPU time behind it. The
# looks' spread is reported, never a trigger: the medians of calls of a few microseconds spread up to 4.6x on a
# host where the judge was denied nothing.
SHORTFALL = 0.25
# The second signal, over the timing pass itself (`PassLoad`): of the CPU the judge's and the candidate's process's
# threads wanted while they took turns serving and timing calls, the share they waited for. It sees what the 0.1 s
# look after the pass can miss (docs/harness.md, "A busy host", has the measurements behind the value).
PASS_SHORTFALL = 0.25
# The candidate's processes may take at most this share of one CPU while the judge measures alone (an honest
# one, idle between requests, takes next to none) before the contention is counted as the candidate's doing.
CANDIDATE_IDLE = 0.1
PROBE_MIN_S = 0.1  # the probe's window at least (scheduler slices are milliseconds: a shorter one says nothing)
PROBE_MAX_LOOKS = 40  # and at most this many looks, so a reference of microseconds ends the probe in time
PROBE_MIN_LOOKS = 2


def _sched_ns(pid: str) -> tuple[int, int]:
    """(ns on a CPU, ns waiting for one) of a process's threads so far; (0, 0) for one gone."""
    return sched_ns(pid) or (0, 0)


def _cpu_ns(pid: str) -> int:
    return _sched_ns(pid)[0]


def _parents() -> dict[str, str]:
    """Every visible process's parent, by pid."""
    found = {}
    for pid in os.listdir(PROC):
        if not pid.isdigit():
            continue
        try:
            with open(f"{PROC}/{pid}/stat") as f:
                found[pid] = f.read().rsplit(")", 1)[1].split()[1]
        except (OSError, IndexError):
            continue
    return found


def adopt_orphans() -> None:
    """Make the judge its descendants' reaper (PR_SET_CHILD_SUBREAPER): a process the candidate's process started
    and left stays among the judge's descendants, where the probe counts its CPU time, with or without the
    sandbox's PID namespace (whose init the judge is). Best effort: without it only the sandbox keeps them."""
    try:
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
    except (OSError, AttributeError):
        pass


PR_SET_CHILD_SUBREAPER = 36


def candidate_pids() -> list[str]:
    """The candidate's processes: every descendant of the judge (its one child, the candidate's process, and what
    that started: `adopt_orphans` keeps orphans among them)."""
    parents = _parents()
    found = {str(os.getpid())}
    grew = True
    while grew:
        more = {pid for pid, parent in parents.items() if parent in found} - found
        found |= more
        grew = bool(more)
    return sorted(found - {str(os.getpid())})


class Probe:
    """Started before the judge's own timing of the reference, `done` after it: what the host gave the judge."""

    def __init__(self, roots: list[int]) -> None:
        self.roots = roots
        self.pids = candidate_pids() if roots else []
        self.cpu0 = sum(_cpu_ns(p) for p in self.pids)
        self.own0 = _sched_ns("self")  # the judge's own threads only
        self.t0 = time.perf_counter()

    def enough(self, looks: int) -> bool:
        elapsed = time.perf_counter() - self.t0
        return looks >= PROBE_MAX_LOOKS or (looks >= PROBE_MIN_LOOKS and elapsed >= PROBE_MIN_S)

    def done(self, medians: list[float]) -> HostContention:
        wall = max(time.perf_counter() - self.t0, 1e-9)
        cpu = None
        if self.roots:  # the processes that existed at the start, and any started since
            pids = set(self.pids) | set(candidate_pids())
            cpu = max(0, sum(_cpu_ns(p) for p in pids) - self.cpu0) / 1e9 / wall
        positive = [m for m in medians if m > 0]
        spread = max(positive) / min(positive) if positive else 1.0
        load = os.getloadavg()[0] / (os.cpu_count() or 1)
        run, wait = (now - then for now, then in zip(_sched_ns("self"), self.own0))
        return judge(HostContention(shortfall=shortfall(run, wait, wall), spread=spread, candidate_cpu=cpu, load=load))


class PassLoad:
    """Started before a timing pass, `done` after it: the second signal, read by the judge from /proc (never
    reported by the candidate's process): the run-queue wait of its own threads and of the candidate's process
    (`roots`) over the pass, and the CPU time the candidate's other processes took meanwhile (a process it
    started to spin and make the host look busy: the veto)."""

    def __init__(self, roots: list[int]) -> None:
        self.roots = [str(p) for p in roots]
        self.others = _others(self.roots)
        self.others0 = sum(_cpu_ns(p) for p in self.others)
        self.t0 = time.perf_counter()
        self.own0 = self._run_wait()

    def _run_wait(self) -> tuple[int, int]:
        pairs = [_sched_ns("self"), *(_sched_ns(p) for p in self.roots)]
        return sum(run for run, _ in pairs), sum(wait for _, wait in pairs)

    def done(self) -> HostContention:
        """What the pass showed (the probe after it adds its own: `probe_looks`)."""
        wall = max(time.perf_counter() - self.t0, 1e-9)
        run, wait = (now - then for now, then in zip(self._run_wait(), self.own0))
        others = set(self.others) | set(_others(self.roots)) if self.roots else set()
        cpu = max(0, sum(_cpu_ns(p) for p in others) - self.others0) / 1e9 / wall if self.roots else None
        return HostContention(pass_shortfall=shortfall(run, wait, wall), pass_others_cpu=cpu)


def _others(roots: list[str]) -> list[str]:
    """The candidate's processes other than those serving calls (`roots`)."""
    return [p for p in candidate_pids() if p not in roots] if roots else []


def shortfall(run_ns: int, wait_ns: int, wall_s: float) -> float | None:
    """Of the CPU the judge's threads wanted over wall_s (their time on a CPU and waiting for one, per second, up to
    one CPU: a reference on two threads that gets one core whole is timed as it would be on one), the share they
    did not get."""
    wanted = min((run_ns + wait_ns) / 1e9 / wall_s, 1.0)
    if wanted <= 0:
        return None
    return max(0.0, wanted - run_ns / 1e9 / wall_s) / wanted


def judge(c: HostContention) -> HostContention:
    """c with `contended` set by the thresholds (either signal: the look after the pass, or the pass's own wait),
    and `by_candidate` where the candidate was not idle (its processes while the judge looked, or its other
    processes over the pass)."""
    signals = (c.shortfall or 0.0) > SHORTFALL or (c.pass_shortfall or 0.0) > PASS_SHORTFALL
    busy = [cpu for cpu in (c.candidate_cpu, c.pass_others_cpu) if cpu is not None]
    c.by_candidate = signals and any(cpu > CANDIDATE_IDLE for cpu in busy)
    c.contended = signals and not c.by_candidate
    return c


def probe_looks(
    look: Callable[[], float], roots: list[int], during: HostContention | None = None
) -> tuple[list[float], HostContention]:
    """Looks (`look`: one short timing of the reference, its median in ms) until the probe has enough; returns
    their medians and what they showed of the host, with what the timing pass showed (`during`, PassLoad's)."""
    probe = Probe(roots)
    medians: list[float] = []
    while not probe.enough(len(medians)):
        medians.append(look())
    found = probe.done(medians)
    if during is not None:
        found.pass_shortfall, found.pass_others_cpu = during.pass_shortfall, during.pass_others_cpu
    return medians, judge(found)


# The checks whose failure a contended host can cause in an honest kernel: each compares times.
TIMING_CHECKS = ("timing cross-check", "unseen-inputs check")
ADVICE = (
    "no verdict on the kernel: evaluate it again on an idle machine (fewer parallel jobs or tests beside it, "
    "OMP_NUM_THREADS at most the free cores); a search does so by itself later in the run"
)


def verdict(failure: CandidateFailure, c: HostContention | None) -> CandidateFailure:
    """A timing check's rejection, judged against what the judge measured of the host: `inconclusive` where the
    host was contended (a busy host is not the candidate's doing), the rejection where it was not, or where the
    contention was the candidate's own processes running while they had nothing to serve."""
    if failure.status is not Status.REJECTED or not failure.reason.startswith(TIMING_CHECKS) or c is None:
        return failure
    if c.contended:
        return CandidateFailure(
            Status.INCONCLUSIVE, f"inconclusive: {failure.reason}; but the host was contended: {c.describe()}; {ADVICE}"
        )
    if c.by_candidate:
        what = (
            f"the candidate's processes used {c.candidate_cpu:.2f} CPUs meanwhile with nothing to serve"
            if (c.candidate_cpu or 0.0) > CANDIDATE_IDLE
            else f"processes the candidate started used {c.pass_others_cpu or 0.0:.2f} CPUs over the timing pass"
        )
        return CandidateFailure(
            Status.REJECTED,
            f"{failure.reason} (the judge's own timing saw the host contended too, but {what}: that contention is "
            "the candidate's)",
        )
    return failure
