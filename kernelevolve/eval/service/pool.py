"""A pool of devices shared by any number of searches, scheduled per evaluation, not per search.

Each device (one `Evaluator` here, one Ray actor on a cluster: eval/service/ray_pool.py) evaluates one candidate at
a time; an evaluation takes the next free device in the order the evaluations asked (FIFO). A search sees the pool
through its `Lane`s (the driver's `Evaluate` port), which share a `QueueClock`: the time its evaluations waited for a
device, which its time budget does not count. A device that is lost mid-evaluation (a Ray actor or its node gone)
fails only that evaluation, which is queued again once and says so in its review. docs/cli.md ("Running on a
cluster").
"""

from __future__ import annotations

import queue
import sys
import threading
import time
from collections.abc import Callable
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from typing import Protocol

from kernelevolve.eval.wire import EvalOptions
from kernelevolve.platforms.base import Platform
from kernelevolve.problem.problem import Problem
from kernelevolve.result import EvalResult, Status

REQUEUES = 1  # a lost device's evaluation is queued again this often, then reported as harness_limit


class DeviceLost(Exception):
    """The device failed, not the candidate: a Ray actor, or the node it ran on, is gone."""


class Device(Protocol):
    """One place that evaluates one candidate at a time: an `Evaluator`, or a Ray actor's handle."""

    platform: Platform

    def evaluate(self, problem: Problem, candidate: Path, options: EvalOptions, /) -> EvalResult: ...

    def prebuild(self, problem: Problem, candidate: Path) -> EvalResult: ...

    def close(self) -> None: ...


class QueueClock:
    """The time during which at least one of a search's evaluations waited for a device (the union of their
    waits, so two waiting at once count once)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._waiting = 0
        self._since = 0.0
        self._total = 0.0

    @contextmanager
    def waiting(self):
        with self._lock:
            if not self._waiting:
                self._since = time.monotonic()
            self._waiting += 1
        try:
            yield
        finally:
            with self._lock:
                self._waiting -= 1
                if not self._waiting:
                    self._total += time.monotonic() - self._since

    def waited_s(self) -> float:
        with self._lock:
            return self._total + (time.monotonic() - self._since if self._waiting else 0.0)


class SharedPool:
    """Devices shared by searches; `lanes()` gives one search its view of them. replace: makes a device to take a
    lost one's place (None where none can be made); where it is given, a lost device is replaced in the
    background and joins the pool once it answers."""

    def __init__(
        self,
        devices: list[Device],
        *,
        describe: Callable[[Device], str] = lambda d: "",
        replace_device: Callable[[Device], Device | None] | None = None,
        builder: Callable[[Problem, Path], EvalResult] | None = None,
    ):
        if not devices:
            raise ValueError("a pool needs at least one device")
        self.platform = devices[0].platform
        self.devices = list(devices)
        self._free: queue.Queue[Device] = queue.Queue()
        for device in devices:
            self._free.put(device)
        self._describe = describe
        self._replace = replace_device
        self._builder = builder
        self._closed = False
        self.lost = 0  # devices lost so far (each one's evaluation queued again or failed)

    @property
    def size(self) -> int:
        return len(self.devices)

    def lanes(self, count: int | None = None) -> list[Lane]:
        """One search's view: `count` lanes (default: one per device), sharing one queue clock."""
        clock = QueueClock()
        return [Lane(self, clock) for _ in range(count or self.size)]

    def evaluate(
        self, problem: Problem, candidate: Path, options: EvalOptions, clock: QueueClock | None = None
    ) -> EvalResult:
        """The candidate on the next free device; raises what the device raises (a malformed problem's
        ProblemError), but a lost device's evaluation is queued again (once), then a harness_limit."""
        clock = clock or QueueClock()
        lost: list[str] = []
        while True:
            t0 = time.monotonic()
            with clock.waiting():
                device = self._take()
            waited = time.monotonic() - t0
            try:
                result = device.evaluate(problem, candidate, options)
            except DeviceLost as e:
                lost.append(f"{self._describe(device) or 'a device'} was lost during the evaluation ({e})")
                self._lose(device)
                if len(lost) > REQUEUES:
                    return self._lost_result(problem, lost)
                continue
            except BaseException:
                self._free.put(device)
                raise
            self._free.put(device)
            return self._recorded(result, device, waited, lost)

    def _take(self) -> Device:
        while True:
            if self._closed:
                raise RuntimeError("the evaluation pool is closed")
            try:
                return self._free.get(timeout=1.0)
            except queue.Empty:
                continue

    def _recorded(self, result: EvalResult, device: Device, waited: float, lost: list[str]) -> EvalResult:
        """What the result says of its placement: the device that timed it alone, its wait in the queue, and a
        lost device's evaluation queued again."""
        where = self._describe(device)
        if where:
            result.checks.append(f"exclusive device: {where} evaluated this candidate and nothing else meanwhile")
        result.stages["queue_wait"] = round(result.stages.get("queue_wait", 0.0) + waited, 4)
        for note in lost:
            result.review.append(f"evaluated again: {note}")
        return result

    def _lost_result(self, problem: Problem, lost: list[str]) -> EvalResult:
        reason = "; then ".join(lost) + f" (queued again {REQUEUES} time(s)): no verdict on the kernel"
        return EvalResult(
            status=Status.HARNESS_LIMIT, correct=False, reason=reason, target=self.platform.name
        ).finalize()

    def _lose(self, device: Device) -> None:
        """A lost device leaves the pool; its replacement joins it once it answers."""
        self.lost += 1
        self.devices = [d for d in self.devices if d is not device]
        if self._replace is None or self._closed:
            return

        def join() -> None:
            try:
                fresh = self._replace(device)
            except Exception as e:  # noqa: BLE001 - a replacement that fails leaves the pool a device short
                print(f"[kernelevolve] a lost device was not replaced: {e}", file=sys.stderr)
                return
            if fresh is not None and not self._closed:
                self.devices.append(fresh)
                self._free.put(fresh)

        threading.Thread(target=join, daemon=True).start()

    def prebuild(self, problem: Problem, candidate: Path) -> EvalResult:
        """The candidate's extensions built outside the devices' queue: on the builder (CPU actors on a cluster),
        else beside the first device's evaluation (eval/evaluator.py's prebuild)."""
        if self._builder is not None:
            return self._builder(problem, candidate)
        return self.devices[0].prebuild(problem, candidate)

    def close(self) -> None:
        self._closed = True
        for device in list(self.devices):
            device.close()


class Lane:
    """One search's view of a shared pool (the driver's `Evaluate` port): one evaluation at a time per lane, the
    device it runs on chosen per evaluation."""

    def __init__(self, pool: SharedPool, clock: QueueClock):
        self.pool = pool
        self.platform = pool.platform
        self.queue_clock = clock

    def evaluate(
        self, problem: Problem, candidate: str | Path, options: EvalOptions | None = None, /, **fields: object
    ) -> EvalResult:
        """As `Evaluator.evaluate`: keyword `fields` override single options."""
        opts = replace(options or EvalOptions(), **fields)
        return self.pool.evaluate(problem, Path(candidate), opts, self.queue_clock)

    def prebuild(self, problem: Problem, candidate: str | Path) -> EvalResult:
        return self.pool.prebuild(problem, Path(candidate))

    def queued_s(self) -> float:
        """Seconds this lane's search waited for a device (not counted against its time budget)."""
        return self.queue_clock.waited_s()

    def close(self) -> None:
        """The pool outlives its searches: its owner closes it."""
