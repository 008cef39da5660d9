"""The one timer: baseline and candidate timed by the same code, interleaved, over rotating input sets.

cuda: CUDA events around each call after an L2 flush and a device spin, a host-clock figure beside them, and
CUDA-graph replays; cpu: time.perf_counter around the call. What is measured and why: docs/harness.md ("Timing");
the hooks the harness gives it (`after_call`, `midway`): docs/architecture.md ("Modules", `timing.py`).
"""

from __future__ import annotations

import resource
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass, fields
from typing import Any

import torch

from kernelevolve.eval.worker import l2
from kernelevolve.platforms import for_device

Fn = Callable[[list[Any]], Any]
Hook = Callable[[str], None]


@dataclass
class TimingStats:
    median_ms: float
    iqr_ms: float
    n: int
    # cuda, events: host time to issue one call while the device is busy (launch overhead, no device wait)
    launch_ms: float | None = None
    # cuda, host clock: from the call's return to the device going idle (what the device still had to do)
    tail_ms: float | None = None
    # cpu: median minor page faults per timed call (fresh pages the allocator handed the call, faulted in there)
    faults_per_call: float | None = None

    def __reduce__(self) -> tuple[Any, tuple[Any, ...]]:
        return _plain_reduce(self)


SINGLE_CALL_LEAD_US = 2000.0  # device spin before a single timed call


@dataclass
class TimerConfig:
    warmup_iters: int = 3
    warmup_s: float = 0.1  # cuda: at least this long of back-to-back work before measuring
    min_iters: int = 10
    max_iters: int = 100
    budget_s: float = 1.0  # per timed function per case, after warm-up
    host_iters: int = 10  # cuda: host-clock iterations per function

    def __reduce__(self) -> tuple[Any, tuple[Any, ...]]:
        return _plain_reduce(self)


def _plain_reduce(obj: Any) -> tuple[Any, tuple[Any, ...]]:
    """A dataclass pickled by its fields (the judge and the candidate's process exchange these): pickle's default
    path would cache __slotnames__ on the class, which the integrity check's fingerprint reads as a re-binding."""
    return (type(obj), tuple(getattr(obj, f.name) for f in fields(obj)))


def _stats(samples: list[float]) -> TimingStats:
    if len(samples) >= 4:
        q = statistics.quantiles(samples, n=4)
        iqr = q[2] - q[0]
    else:
        iqr = 0.0
    return TimingStats(statistics.median(samples), iqr, len(samples))


def _rotations(names: list[str], it: int) -> list[str]:
    k = it % len(names)
    return names[k:] + names[:k]


def midway_iteration(iters: int, sets: int) -> int:
    """The iteration whose start rotates the sets' contents (`midway`): late enough to time mostly warm calls,
    early enough that every input set is used after it."""
    return min(iters // 2, iters - sets)


class Timer:
    def __init__(self, device: torch.device, config: TimerConfig | None = None):
        self.device = device
        self.config = config or TimerConfig()
        self.platform = for_device(device)
        self._event = self.platform.event_factory()  # None: the host clock times (docs/platforms.md)
        self.on_device = self._event is not None
        self._flush = None
        if self.on_device:
            # Larger than any current L2 (H100/H200: 50-60 MB, MI300X: 256 MB Infinity Cache).
            self._flush = torch.empty(256 * 1024 * 1024 // 4, dtype=torch.int32, device=device)
        # Saved here so that a candidate re-binding these names later cannot change what we call.
        self._perf_counter = time.perf_counter
        self._getrusage = resource.getrusage
        self._sync = self.platform.synchronizer()
        self._pads: dict[str, int] = {}  # cuda: the device lead (cycles) each function's timed calls had

    def time_interleaved(
        self,
        fns: dict[str, Fn],
        input_sets: list[list[Any]],
        after_call: Hook | None = None,
        midway: Callable[[], None] | None = None,
        before: Callable[[int, int, list[Any]], list[Any] | None] | None = None,
    ) -> dict[str, TimingStats]:
        """Round-robin over the functions (order rotated each iteration) and the input sets. before (host clock
        only): called with (iteration, iterations, its input set) at the start of each iteration, before `midway`
        and the calls, outside every bracket; an input set it returns takes the iteration's place for its calls
        (eval/worker/sampled.py)."""
        names = list(fns)
        per_iter_s = self._warm_up(fns, input_sets)
        cfg = self.config
        iters = cfg.max_iters if per_iter_s <= 0 else int(cfg.budget_s / per_iter_s)
        iters = max(cfg.min_iters, min(cfg.max_iters, iters))
        after = after_call or (lambda name: None)
        half = midway_iteration(iters, len(input_sets)) if midway else -1
        if self.on_device:
            return self._cuda_events(fns, input_sets, iters, after, half, midway)
        samples: dict[str, list[float]] = {n: [] for n in names}
        faults: dict[str, list[int]] = {n: [] for n in names}
        for it in range(iters):
            inputs = input_sets[it % len(input_sets)]
            if before is not None and (swapped := before(it, iters, inputs)) is not None:
                inputs = swapped
            if it == half:
                midway()
            for name in _rotations(names, it):
                remote = getattr(fns[name], "remote_ms", None)  # host.RemoteFn: the candidate's own process
                if remote is not None:
                    ms, nfaults = remote(inputs)
                    samples[name].append(ms)
                    faults[name].append(nfaults)
                else:
                    f0 = self._getrusage(resource.RUSAGE_SELF).ru_minflt
                    t0 = self._perf_counter()
                    fns[name](inputs)
                    samples[name].append((self._perf_counter() - t0) * 1e3)
                    faults[name].append(self._getrusage(resource.RUSAGE_SELF).ru_minflt - f0)
                after(name)
        stats = {n: _stats(s) for n, s in samples.items()}
        for name, st in stats.items():
            st.faults_per_call = statistics.median(faults[name])
        return stats

    def _warm_up(self, fns: dict[str, Fn], input_sets: list[list[Any]]) -> float:
        """Runs every function; returns the slowest one's seconds per call."""
        slowest = 0.0
        for fn in fns.values():
            for i in range(self.config.warmup_iters):
                t0 = self._perf_counter()
                fn(input_sets[i % len(input_sets)])
                self._sync(self.device)
                slowest = max(slowest, self._perf_counter() - t0) if i else slowest
        if self.on_device:  # keep the GPU busy long enough for its clocks to settle
            t0 = self._perf_counter()
            rounds = 0
            while self._perf_counter() - t0 < self.config.warmup_s and rounds < 1000:
                for fn in fns.values():
                    fn(input_sets[rounds % len(input_sets)])
                rounds += 1
                if rounds % 8 == 0:
                    self._sync(self.device)
            self._sync(self.device)
        return slowest

    def _cycles_per_us(self) -> float:
        """Clock rate seen by torch.cuda._sleep, measured once per timer."""
        if not hasattr(self, "_rate"):
            start, end = self._event(enable_timing=True), self._event(enable_timing=True)
            self.platform.spin(1000)
            start.record()
            self.platform.spin(2_000_000)
            end.record()
            end.synchronize()
            self._rate = 2_000_000 / max(start.elapsed_time(end) * 1e3, 1.0)
        return self._rate

    def _host_launch_us(self, fns: dict[str, Fn], input_sets: list[list[Any]]) -> dict[str, float]:
        """Host time to issue each call (GPU kept busy meanwhile, so the issue never waits on it)."""
        out = {}
        for name, fn in fns.items():
            samples = []
            for i in range(5):
                self.platform.spin(int(self._cycles_per_us() * 2000))  # 2 ms of device work ahead of us
                t0 = self._perf_counter()
                fn(input_sets[i % len(input_sets)])
                samples.append((self._perf_counter() - t0) * 1e6)
            out[name] = statistics.median(samples)
        self._sync(self.device)
        return out

    def _cuda_events(
        self,
        fns: dict[str, Fn],
        input_sets: list[list[Any]],
        iters: int,
        after: Hook,
        half: int,
        midway: Callable[[], None] | None,
    ) -> dict[str, TimingStats]:
        """Device time of each call. Before each start event the device is given a spin (torch.cuda._sleep)
        longer than the host needs to issue the call, so the timed window never includes the device
        waiting for the host: launch-bound calls measure the same from run to run (the host-clock figure
        is where launch overhead shows)."""
        names = list(fns)
        rate = self._cycles_per_us()
        launch_us = self._host_launch_us(fns, input_sets)
        pad = {n: int(rate * min(2.0 * us + 20.0, 5000.0)) for n, us in launch_us.items()}
        self._pads.update(pad)
        marks: dict[str, list[tuple[Any, Any]]] = {n: [] for n in names}
        l2.clear_limit()
        for it in range(iters):
            if it == half and midway is not None:
                midway()
            inputs = input_sets[it % len(input_sets)]
            for name in _rotations(names, it):
                start, end = self._event(enable_timing=True), self._event(enable_timing=True)
                l2.reset()
                self._flush.zero_()
                self.platform.spin(pad[name])
                start.record()
                fns[name](inputs)
                end.record()
                marks[name].append((start, end))
                after(name)
        self._sync(self.device)
        stats = {n: _stats([s.elapsed_time(e) for s, e in m]) for n, m in marks.items()}
        for name, st in stats.items():
            st.launch_ms = launch_us[name] / 1e3
        return stats

    def time_host(self, fns: dict[str, Fn], input_sets: list[list[Any]]) -> dict[str, TimingStats | None]:
        """cuda: host clock around the call and a whole-device synchronize, L2 flushed before; it counts
        work the events cannot see (side streams, threads) and launch overhead."""
        if not self.on_device:
            return {n: None for n in fns}
        names = list(fns)
        samples: dict[str, list[float]] = {n: [] for n in names}
        tails: dict[str, list[float]] = {n: [] for n in names}
        for it in range(self.config.host_iters):
            inputs = input_sets[it % len(input_sets)]
            for name in _rotations(names, it):
                total_ms, tail_ms, _ = self._host_clocked(fns[name], inputs)
                samples[name].append(total_ms)
                tails[name].append(tail_ms)
        stats = {n: _stats(s) for n, s in samples.items()}
        for name, st in stats.items():
            st.tail_ms = statistics.median(tails[name])
        return stats

    def time_once(self, fn: Fn, inputs: list[Any], name: str = "") -> tuple[float, Any]:
        """One call timed as time_interleaved times each of its calls: on cuda its device time between events,
        L2 flushed and the device given a lead; on the cpu the host clock. Returns (ms, output). The lead is at
        least SINGLE_CALL_LEAD_US: a series keeps a backlog queued, a single call starts on an idle device, and
        a host that stalls after other work (a large copy) would otherwise leave the device waiting inside the
        timed window."""
        if not self.on_device:
            t0 = self._perf_counter()
            out = fn(inputs)
            return (self._perf_counter() - t0) * 1e3, out
        start, end = self._event(enable_timing=True), self._event(enable_timing=True)
        l2.reset()
        self._flush.zero_()
        self.platform.spin(max(self._pads.get(name, 0), int(self._cycles_per_us() * SINGLE_CALL_LEAD_US)))
        start.record()
        out = fn(inputs)
        end.record()
        self._sync(self.device)
        return start.elapsed_time(end), out

    def _host_clocked(self, fn: Fn, inputs: list[Any]) -> tuple[float, float, Any]:
        """L2 flushed and the device idle (cuda), then the host clock around the call and a whole-device
        synchronize: (total ms, ms from the call's return to the device going idle, output)."""
        if self.on_device:
            l2.reset()
            self._flush.zero_()
            self._sync(self.device)
        t0 = self._perf_counter()
        out = fn(inputs)
        t1 = self._perf_counter()
        self._sync(self.device)
        t2 = self._perf_counter()
        return (t2 - t0) * 1e3, (t2 - t1) * 1e3, out

    def time_graphs(self, fns: dict[str, Fn], inputs: list[Any]) -> dict[str, TimingStats | None]:
        """Per-replay time of a CUDA graph of each function (None where capture fails), interleaved."""
        if not self.on_device:
            return {n: None for n in fns}
        graphs: dict[str, Any] = {}
        for name, fn in fns.items():
            try:
                g, _ = self.platform.capture(lambda fn=fn: fn(inputs), self.device)
                g.replay()
                self._sync(self.device)
                graphs[name] = g
            except Exception:  # noqa: BLE001 - capture is best effort; eager timings stand
                self._sync(self.device)
        names = list(graphs)
        marks: dict[str, list[tuple[Any, Any]]] = {n: [] for n in names}
        for it in range(max(self.config.min_iters, self.config.max_iters // 2) if names else 0):
            for name in _rotations(names, it):
                start, end = self._event(enable_timing=True), self._event(enable_timing=True)
                l2.reset()
                self._flush.zero_()
                start.record()
                graphs[name].replay()
                end.record()
                marks[name].append((start, end))
        self._sync(self.device)
        out: dict[str, TimingStats | None] = {n: None for n in fns}
        out.update({n: _stats([s.elapsed_time(e) for s, e in m]) for n, m in marks.items()})
        return out


def capture(call: Callable[[], Any], device: torch.device, warm_ups: int = 2) -> tuple[Any, Any]:
    """A graph of one run of `call` on the device's platform, and what the captured run returned; raises where the
    call cannot be captured."""
    return for_device(device).capture(call, device, warm_ups)
