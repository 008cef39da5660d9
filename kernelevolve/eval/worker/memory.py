"""The harness's device-memory plan: how many input sets it keeps on the device, and what waits on the host.

Every input set the harness holds (correctness trials, timing sets, held-back unseen sets, their reference
outputs and float64 results) is device memory the candidate and the baseline cannot use. At KernelBench's own
sizes (a 6 GB input) holding all of them at once does not fit a 141 GB device, so per case the harness keeps
at most HARNESS_SHARE of the device's free memory (KERNELEVOLVE_HARNESS_MEMORY_SHARE sets another): the timing
sets first (they must live on the device), then the trials (else kept on the host and brought in one at a
time), then the unseen sets (else kept on the host, copied into the timing buffers when used). Where the host
cannot hold every trial either, the case runs the trials it can hold (the result says how many of how many).
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import torch

from kernelevolve.eval.worker import trees
from kernelevolve.platforms import for_device

HARNESS_SHARE = 0.5
SHARE_VARIABLE = "KERNELEVOLVE_HARNESS_MEMORY_SHARE"  # another share of free device memory (a shared GPU)
GB = 1e9
# The judge's block of calls on unseen contents (eval/worker/proof.py), made after timing: it needs about three
# sets' bytes a call (the new contents with their reference, the candidate's output, the reference's on the same
# contents), within half of what is free then; the plan leaves that room for its fewest calls before it adds
# timing sets.
BLOCK_SHARE = 0.5
BLOCK_SETS_PER_CALL = 3
BLOCK_ROOM_SETS = 2 * 2 * BLOCK_SETS_PER_CALL  # two calls, at BLOCK_SHARE
OTHERS_SHARE = 0.1  # other processes holding more of the device than this: the result says so (timing may suffer)
OTHERS_FLOOR = 6 * 10**9  # and more than this: a process's CUDA context alone takes about 0.5 GB


def harness_share() -> float:
    raw = os.environ.get(SHARE_VARIABLE)
    if raw is None:
        return HARNESS_SHARE
    try:
        share = float(raw)
    except ValueError:
        share = -1.0
    if not 0 < share <= 1:
        raise ValueError(f"{SHARE_VARIABLE} must be a fraction in (0, 1], not {raw!r}")
    return share


@dataclass
class MemoryPlan:
    budget: int = 0  # bytes the harness may hold on the device; 0: no plan (cpu), everything stays where made
    set_bytes: int = 0  # one input set and its reference output
    exact_bytes: int = 0  # one trial's float64 result
    timing_sets: int = 0
    trials_on_host: bool = False
    unseen_on_host: bool = False
    unseen_sets: int = 0  # held-back sets for the unseen-inputs check (fewer where the host cannot hold them)
    trials: int = 0  # correctness trials the harness can hold (fewer than asked where the host cannot hold them)

    def describe(self) -> str:
        if not self.budget:
            return ""
        parts = [f"device budget {self.budget / GB:.3g} GB, {self.set_bytes / GB:.3g} GB per input set"]
        parts.append(f"{self.timing_sets} timing set{'s' if self.timing_sets != 1 else ''}")
        if self.trials_on_host:
            parts.append("trials on the host, brought in one at a time")
        if self.unseen_on_host:
            parts.append(f"{self.unseen_sets} unseen sets on the host")
        return "; ".join(parts)


class HarnessLimit(RuntimeError):
    """The harness cannot hold what the problem's sizes need (an evaluation's `harness_limit`)."""


def host_available() -> int | None:
    """MemAvailable of /proc/meminfo (None where there is none): what the host can still give without swapping
    or its out-of-memory killer."""
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        return None
    return None


def free_bytes(device: torch.device) -> int:
    """Free device memory, counting blocks the caching allocator holds unused."""
    return for_device(device).free_bytes(device)


def others_bytes(device: torch.device) -> tuple[int, int]:
    """(bytes of the device in use outside this process's allocator, the device's total): other processes
    (spare workers' contexts, a worker that outlived its evaluation, another job on a shared GPU) and this
    process's own CUDA context."""
    return for_device(device).others_bytes(device)


def others_note(held: int, total: int, holders: dict[str, list[int]] | None = None) -> str:
    """What a result says when other processes held more of the device than OTHERS_SHARE ("" otherwise), with who
    they were where the evaluator could tell (eval/holders.py)."""
    if total <= 0 or held <= max(OTHERS_SHARE * total, OTHERS_FLOOR):
        return ""
    return f"other processes held {held / GB:.3g} GB of the device's {total / GB:.3g} GB ({holders_text(holders)})"


def holders_text(holders: dict[str, list[int]] | None) -> str:
    """'spare workers: 2 processes, 1.2 GB; another job's processes: 1 process, 8.6 GB', in the evaluator's order."""
    if holders is None:
        return "who held it is not known: the evaluator could not read NVML"
    parts = [
        f"{role}: {count} process{'es' if count != 1 else ''}, {used / GB:.3g} GB"
        for role, (count, used) in holders.items()
        if count
    ]
    return "; ".join(parts) or "no other process held device memory as the job went out"


def out_of_memory_limit(held: int, total: int, holders: dict[str, list[int]] | None = None) -> str:
    """The reason an out-of-memory error is the harness's limit, not the candidate's doing ("" where the candidate
    had the device): other processes held more than half of it."""
    if total <= 0 or held <= 0.5 * total:
        return ""
    note = others_note(held, total, holders)
    return f"harness limit: the device ran out of memory while {note}: not the candidate's doing"


_ASKED = re.compile(r"Tried to allocate ([0-9.]+) (GiB|MiB|KiB|B)\b")
_UNITS = {"GiB": 2**30, "MiB": 2**20, "KiB": 2**10, "B": 1}


def candidate_short(e: BaseException, device: torch.device) -> str:
    """Why an out-of-memory error raised in the candidate's code is the harness's limit ("" where it is the
    candidate's own): its demand, what its process's allocator holds plus what it asked for, fits the part of the
    device the harness leaves a candidate (all but the harness's share), so the device was short because of the
    harness's input sets or other processes. In the judge's own process the harness's sets count as the
    candidate's: only a larger demand is blamed there."""
    platform = for_device(device)
    if not platform.separate_device():
        return ""
    found = _ASKED.search(str(e))
    asked = int(float(found.group(1)) * _UNITS[found.group(2)]) if found else 0
    try:
        held, free, total = platform.held_and_free(device)
    except Exception:  # noqa: BLE001 - a device that cannot say: the error stands as the candidate's
        return ""
    room = (1 - harness_share()) * total
    if held + asked > room:
        return ""
    return (
        f"harness limit: the device ran out of memory while the candidate held {held / GB:.3g} GB and asked for "
        f"{asked / GB:.3g} GB more, within the {room / GB:.3g} GB of the device's {total / GB:.3g} GB the harness "
        f"leaves a candidate ({free / GB:.3g} GB free): the rest was held by the harness and other processes, not the "
        "candidate"
    )


def make_plan(
    device: torch.device, set_bytes: int, exact_bytes: int, trials: int, timing_sets: int, unseen_sets: int
) -> MemoryPlan:
    """The device holds what fits in its share; the host holds the rest within its own share of MemAvailable, the
    trials first (as many as it can hold). Raises HarnessLimit where not even one trial can be held."""
    if not for_device(device).separate_device() or set_bytes <= 0:
        return MemoryPlan(timing_sets=timing_sets, unseen_sets=unseen_sets, trials=trials)
    budget = int(harness_share() * free_bytes(device))
    # The checks before the comforts: one timing set, the trials (on the device the candidate keeps a process of
    # its own), the held-back sets and room for the judge's block of calls on unseen contents; then the further
    # timing sets, with what is left.
    timing = min(timing_sets, 1)
    left = budget - timing * set_bytes
    trial_bytes = set_bytes + exact_bytes
    trials_on_host = trials * trial_bytes > left
    left -= trial_bytes if trials_on_host else trials * trial_bytes
    unseen_on_host = unseen_sets * set_bytes > left
    if not unseen_on_host:
        left -= unseen_sets * set_bytes
    left -= BLOCK_ROOM_SETS * set_bytes
    timing += min(timing_sets - timing, max(0, left // set_bytes))
    available = host_available()
    host_left = int(HARNESS_SHARE * available) if available is not None else None
    if trials_on_host and host_left is not None:
        held = min(trials, max(0, host_left // trial_bytes))
        if not held:
            raise HarnessLimit(
                f"one trial needs {trial_bytes / GB:.3g} GB, more than the device's share and half the host's "
                f"available {available / GB:.3g} GB: run on a larger machine"
            )
        trials = held
        host_left -= trials * trial_bytes
    unseen = unseen_sets
    if unseen_on_host and host_left is not None:
        unseen = min(unseen_sets, max(0, host_left // set_bytes))
    return MemoryPlan(budget, set_bytes, exact_bytes, timing, trials_on_host, unseen_on_host, unseen, trials)


def to(tree: Any, device: torch.device) -> Any:
    return trees.map_tensors(lambda x: x.to(device), tree)


@contextmanager
def resident(trial: Any, device: torch.device) -> Iterator[None]:
    """The trial's inputs, reference and float64 result on `device` while the block runs, back on the host after
    (a trial not on the host is left alone)."""
    if not getattr(trial, "on_host", False):
        yield
        return
    held = (trial.inputs, trial.reference, trial.oracle)
    trial.inputs, trial.reference = to(trial.inputs, device), to(trial.reference, device)
    if trial.oracle is not None:
        trial.oracle = type(trial.oracle)(to(trial.oracle.exact, device), trial.oracle.budgets)
    try:
        yield
    finally:
        trial.inputs, trial.reference, trial.oracle = held
