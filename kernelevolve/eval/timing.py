"""The one timer: baseline and candidate timed by the same code, interleaved, over rotating input sets.

cuda: CUDA events, an L2 flush before every iteration, a whole-device synchronize before the end
event (work on side streams is counted), median and interquartile range. Optionally CUDA-graph
replays, which take launch overhead out of small kernels. cpu: time.perf_counter around the call.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch

Fn = Callable[[list[Any]], Any]


@dataclass
class TimingStats:
    median_ms: float
    iqr_ms: float
    n: int


@dataclass
class TimerConfig:
    warmup_iters: int = 3
    min_iters: int = 10
    max_iters: int = 100
    budget_s: float = 1.0  # per timed function per case, after warm-up


def _stats(samples: list[float]) -> TimingStats:
    if len(samples) >= 4:
        q = statistics.quantiles(samples, n=4)
        iqr = q[2] - q[0]
    else:
        iqr = 0.0
    return TimingStats(statistics.median(samples), iqr, len(samples))


class Timer:
    def __init__(self, device: torch.device, config: TimerConfig | None = None):
        self.device = device
        self.config = config or TimerConfig()
        self.is_cuda = device.type == "cuda"
        self._flush = None
        if self.is_cuda:
            # Larger than any current L2 (H100/H200: 50-60 MB, MI300X: 256 MB Infinity Cache).
            self._flush = torch.empty(256 * 1024 * 1024 // 4, dtype=torch.int32, device=device)
        # Saved here so that a candidate re-binding these names later cannot change what we call.
        self._perf_counter = time.perf_counter
        self._sync = torch.cuda.synchronize if self.is_cuda else (lambda *a: None)

    def _once(self, fn: Fn, inputs: list[Any]) -> float:
        if self.is_cuda:
            start = torch.cuda.Event(enable_timing=True)
            end = torch.cuda.Event(enable_timing=True)
            self._flush.zero_()
            start.record()
            fn(inputs)
            self._sync(self.device)
            end.record()
            end.synchronize()
            return start.elapsed_time(end)
        t0 = self._perf_counter()
        fn(inputs)
        return (self._perf_counter() - t0) * 1e3

    def time_interleaved(self, fns: dict[str, Fn], input_sets: list[list[Any]]) -> dict[str, TimingStats]:
        """Round-robin over the functions (order rotated each iteration) and the input sets."""
        cfg = self.config
        names = list(fns)
        est: dict[str, float] = {}
        for name in names:
            for i in range(cfg.warmup_iters):
                est[name] = self._once(fns[name], input_sets[i % len(input_sets)])
        slowest_s = max(est.values()) / 1e3 if est else 0.0
        iters = cfg.max_iters if slowest_s <= 0 else int(cfg.budget_s / slowest_s)
        iters = max(cfg.min_iters, min(cfg.max_iters, iters))
        samples: dict[str, list[float]] = {n: [] for n in names}
        for it in range(iters):
            inputs = input_sets[it % len(input_sets)]
            k = it % len(names)
            for name in names[k:] + names[:k]:
                samples[name].append(self._once(fns[name], inputs))
        return {n: _stats(s) for n, s in samples.items()}

    def time_graphs(self, fns: dict[str, Fn], inputs: list[Any]) -> dict[str, TimingStats | None]:
        """Per-replay time of a CUDA graph of each function (None where capture fails), interleaved."""
        if not self.is_cuda:
            return {n: None for n in fns}
        graphs: dict[str, torch.cuda.CUDAGraph] = {}
        for name, fn in fns.items():
            try:
                stream = torch.cuda.Stream(self.device)
                stream.wait_stream(torch.cuda.current_stream(self.device))
                with torch.cuda.stream(stream):
                    for _ in range(2):
                        fn(inputs)
                torch.cuda.current_stream(self.device).wait_stream(stream)
                g = torch.cuda.CUDAGraph()
                with torch.cuda.graph(g):
                    fn(inputs)
                g.replay()
                self._sync(self.device)
                graphs[name] = g
            except Exception:  # noqa: BLE001 - capture is best effort; eager timings stand
                self._sync(self.device)
        samples: dict[str, list[float]] = {n: [] for n in graphs}
        names = list(graphs)
        reps = max(self.config.min_iters, self.config.max_iters // 2)
        for it in range(reps):
            k = it % max(1, len(names))
            for name in names[k:] + names[:k]:
                start = torch.cuda.Event(enable_timing=True)
                end = torch.cuda.Event(enable_timing=True)
                self._flush.zero_()
                start.record()
                graphs[name].replay()
                end.record()
                end.synchronize()
                samples[name].append(start.elapsed_time(end))
        return {n: (_stats(samples[n]) if n in samples else None) for n in fns}
