"""One case's timing pass, wherever the candidate runs: the judge's process runs it for a candidate in its own
process (and, on the cpu target, for one whose every call is a request), the candidate's process runs it on a GPU
(eval/worker/runner.py), where each call's device time is only seen by events in the process that launched it.

The pass is the one timer's (eval/worker/timing.py): the functions interleaved over the timing sets, the sets'
contents rotated half-way (a result cached per input buffer then goes stale), the candidate's last output per set
kept for the timing-outputs check; then the host-clock and CUDA-graph figures.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import torch

from kernelevolve.eval.worker import trees
from kernelevolve.eval.worker.timing import Timer, TimingStats, _plain_reduce

Fn = Callable[[list[Any]], Any]


@dataclass
class Series:
    stats: dict[str, TimingStats]
    host: dict[str, TimingStats | None]
    graphs: dict[str, TimingStats | None]
    last: dict[int, Any] = field(default_factory=dict)  # the timing set whose contents an output is of -> output

    def __reduce__(self) -> tuple[Any, tuple[Any, ...]]:
        return _plain_reduce(self)


class Recorder:
    """The candidate's last output per timing set, and the half-way rotation of the sets' contents."""

    def __init__(self, sets: list[Any]) -> None:
        self.sets = sets
        self.index = {id(inputs): k for k, inputs in enumerate(sets)}
        self.last: dict[int, Any] = {}
        self.rotated = False

    def wrap(self, call: Fn) -> Fn:
        def candidate(inputs: list[Any]) -> Any:
            out = call(inputs)
            self.last[self.index[id(inputs)]] = out
            return out

        return candidate

    def midway(self) -> None:
        if trees.same_layout(self.sets):
            rotate_contents(self.sets)
            self.rotated = True
        self.last.clear()

    def outputs(self, last: dict[int, Any] | None = None) -> dict[int, Any]:
        """Keyed by the set whose contents the output is of (after a rotation, set k's buffers held set k+1's)."""
        n = len(self.sets)
        found = self.last if last is None else last
        return {(k + 1) % n if self.rotated else k: out for k, out in found.items()}


def measure(
    timer: Timer,
    fns: dict[str, Fn],
    sets: list[Any],
    after_call: Callable[[str], None],
    midway: Callable[[], None],
    copy: Fn | None = None,
    before: Callable[[int, int, list[Any]], list[Any] | None] | None = None,
) -> tuple[dict[str, TimingStats], Callable[[], tuple[dict, dict]]]:
    """The interleaved series (with copy, a device copy of the case's minimum bytes beside them); returns its
    stats and a function that then takes the host-clock and CUDA-graph figures (after whatever the caller checks
    in between), so a copy's buffers are gone before them. before: Timer.time_interleaved's."""
    timed = dict(fns)
    if copy is not None:
        timed["copy"] = copy
    del copy
    with torch.no_grad():
        stats = timer.time_interleaved(timed, sets, after_call=after_call, midway=midway, before=before)
    timed.clear()

    def rest() -> tuple[dict, dict]:
        with torch.no_grad():
            if timer.on_device:
                timer.platform.synchronize(timer.device)
            host = timer.time_host(fns, sets)
            graphs = timer.time_graphs(fns, sets[0])
        return host, graphs

    return stats, rest


def copy_of(n_bytes: int, device: torch.device) -> Fn | None:
    """`dst.copy_(src)` moving n_bytes in all (half read, half written), or None where there is no room for it
    (the floor is an extra, never a reason to fail an evaluation)."""
    if n_bytes < 2:
        return None
    try:
        src = torch.empty(n_bytes // 2, dtype=torch.uint8, device=device).fill_(1)
        dst = torch.empty_like(src)
    except (torch.OutOfMemoryError, RuntimeError):  # the host's allocator raises RuntimeError
        return None
    return lambda inp: dst.copy_(src)


def rotate_contents(sets: list[list[Any]]) -> None:
    """Set k takes set k+1's tensor contents, the last the first's: the same buffers, other values."""
    leaves = [trees.tensors(s) for s in sets]
    for j, first in enumerate(leaves[0]):
        saved = first.clone()
        for k in range(len(sets) - 1):
            leaves[k][j].copy_(leaves[k + 1][j])
        leaves[-1][j].copy_(saved)
