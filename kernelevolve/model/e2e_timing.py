"""The forward's latency and throughput per variant (eager, torch.compile default and max-autotune, the swapped
model eager and compiled), each compiled once, with device graphs off and, where the target captures them, on
(docs/model.md, "The end-to-end proof"). Every sample is `profile.wall_ms`, the model table's one clock.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch

from kernelevolve.model.profile import wall_ms
from kernelevolve.platforms import for_device

# name -> (the swapped model?, torch.compile's mode with graphs off, with graphs on; None: eager)
VARIANTS: dict[str, tuple[bool, tuple[str, str] | None]] = {
    "eager": (False, None),
    "compile": (False, ("default", "reduce-overhead")),
    "max-autotune": (False, ("max-autotune-no-cudagraphs", "max-autotune")),
    "swapped": (True, None),
    "swapped-compile": (True, ("default", "reduce-overhead")),
}
DEFAULT_VARIANTS = "eager,compile,swapped,swapped-compile"  # max-autotune compiles for minutes: asked for by name
TIMED_RUNS = 20  # samples per variant: the median and the 90th percentile
WARMUPS = 3


class VariantError(Exception):
    """--variants names one that does not exist."""


@dataclass
class Timed:
    """One variant's forward, timed (or why not)."""

    name: str
    graphs: bool  # device graphs on (CUDA graphs: captured eager, or torch.compile's reduce-overhead)
    status: str = "ok"  # "ok" or "failed"
    error: str = ""  # a failed variant's error, its first line
    median_ms: float | None = None
    p90_ms: float | None = None
    throughput: float | None = None  # batch rows per second at the median
    compile_s: float | None = None  # the first call's time (compilation, capture), in seconds

    @property
    def label(self) -> str:
        return self.name + (" +graphs" if self.graphs else "")


def parse_variants(text: str) -> list[str]:
    names = [n.strip() for n in text.split(",") if n.strip()]
    unknown = [n for n in names if n not in VARIANTS]
    if unknown or not names:
        given = ", ".join(unknown) or "(none given)"
        raise VariantError(f"--variants: unknown {given}; choose from {', '.join(VARIANTS)}")
    return names


def graphs_off_because(device: torch.device) -> str:
    """'' where the target captures device graphs (a tiny call captured to find out), else why not."""
    try:
        for_device(device).capture(lambda: torch.ones(1, device=device).add_(1), device, warm_ups=1)
    except Exception as e:  # noqa: BLE001 - the platform's own words
        return f"{type(e).__name__}: {e}".strip()
    return ""


def first_line(e: BaseException) -> str:
    text = str(e).strip()
    return f"{type(e).__name__}: {text.splitlines()[0] if text else ''}"[:300]


def batch_rows(args: tuple, kwargs: dict) -> int:
    """The batch: the first dimension of the first tensor input (1 where there is none)."""
    for v in [*args, *kwargs.values()]:
        if isinstance(v, torch.Tensor) and v.dim():
            return int(v.shape[0])
    return 1


@dataclass
class Forward:
    """What a variant runs: the original and the swapped model, one batch, on one device."""

    model: torch.nn.Module
    swapped: torch.nn.Module
    args: tuple
    kwargs: dict
    device: torch.device


def time_variant(forward: Forward, name: str, graphs: bool, runs: int = TIMED_RUNS) -> Timed:
    """The variant built (compiled or captured once), warmed up and timed; a failure anywhere is the variant's
    status with its error's first line, never the caller's exception."""
    timed = Timed(name, graphs)
    swap, modes = VARIANTS[name]
    module = forward.swapped if swap else forward.model
    try:
        with torch.no_grad():
            start = time.perf_counter()
            call = _built(module, forward, modes[graphs] if modes else None, graphs)
            wall_ms(call, forward.device, runs=1, warmups=0)  # the first call compiles
            timed.compile_s = time.perf_counter() - start
            wall_ms(call, forward.device, runs=WARMUPS, warmups=0)
            samples = [wall_ms(call, forward.device, runs=1, warmups=0) for _ in range(max(runs, 2))]
    except Exception as e:  # noqa: BLE001 - a variant that does not compile or run is reported, not fatal
        timed.status, timed.error = "failed", first_line(e)
        return timed
    timed.median_ms = statistics.median(samples)
    timed.p90_ms = statistics.quantiles(samples, n=10, method="inclusive")[-1]
    rows = batch_rows(forward.args, forward.kwargs)
    timed.throughput = rows / (timed.median_ms / 1000.0) if timed.median_ms > 0 else None
    return timed


def _built(module: torch.nn.Module, forward: Forward, mode: str | None, graphs: bool) -> Callable[[], Any]:
    args, kwargs = forward.args, forward.kwargs
    if mode is not None:
        compiled = torch.compile(module, mode=mode)  # compiles on its first call
        torch.compiler.reset()  # each variant compiled anew, not from the previous one's caches
        return lambda: compiled(*args, **kwargs)
    if not graphs:
        return lambda: module(*args, **kwargs)
    graph, _ = for_device(forward.device).capture(lambda: module(*args, **kwargs), forward.device)
    return graph.replay


def time_all(forward: Forward, names: list[str], runs: int, say: Callable[[str], None]) -> tuple[list[Timed], str]:
    """Every asked variant with graphs off and, where the target captures them, on; and why graphs are off (''
    where they are on)."""
    why = graphs_off_because(forward.device)
    timed = []
    for name in names:
        for graphs in (False, True) if not why else (False,):
            label = name + (" +graphs" if graphs else "")
            say(f"timing {label} ...")
            t = time_variant(forward, name, graphs, runs)
            say(f"  {label}: {_said(t)}")
            timed.append(t)
    return timed, why


def _said(t: Timed) -> str:
    if t.status != "ok":
        return f"failed: {t.error}"
    return f"median {t.median_ms:.4g} ms, p90 {t.p90_ms:.4g} ms (first call {t.compile_s:.3g} s)"
