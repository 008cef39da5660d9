"""Fused regions of a model's graph as problem files (docs/model.md, "Regions").

`find_regions(model, args, kwargs, target)` exports the model (graph_capture), partitions its ATen graph into
fused regions (partition), writes each region worth extracting as an ordinary problem file (region_source),
checks that the problem's `Model` reproduces the region's outputs on the values the model gave it, and times one
occurrence on `target`. Regions with equal signatures are one problem, counted. A region that fails any of these
steps is skipped; `last_skipped()` says which and why.
"""

from __future__ import annotations

import threading
import types
from dataclasses import dataclass
from typing import Any

import torch
import torch.fx as fx

from kernelevolve.model.graph_capture import CapturedGraph, RegionError, capture
from kernelevolve.model.partition import Group, kind, partition, worth_extracting
from kernelevolve.model.profile import wall_ms
from kernelevolve.model.region_source import RegionCode, RegionSourceError, boundary, region_code
from kernelevolve.platforms import Platform, get_platform
from kernelevolve.platforms.base import DeviceMissing

__all__ = ["Region", "RegionError", "find_regions", "last_skipped"]

KINDS = ("pointwise", "reduction", "normalization", "gemm_epilogue", "attention", "embedding")
WARMUP, REPEATS = 2, 7  # runs before timing, timed runs (the median is kept)


@dataclass
class Region:
    """One fused region of a model's forward, as a problem (docs/model.md, "Regions")."""

    name: str  # readable and file-system safe, unique among the model's regions
    kind: str  # one of KINDS
    signature: str  # equal for regions that are one problem: same ops, shapes, dtypes, constants
    ops: list[str]  # the ATen operators it covers, e.g. aten::add.Tensor
    count: int  # occurrences in one forward
    time_ms: float  # eager time of one occurrence on the target (median of REPEATS runs)
    source: str  # a complete problem file computing exactly the region


_last = threading.local()


def last_skipped() -> list[tuple[str, str]]:
    """(region, reason) for each region the last `find_regions` call in this thread found but could not extract;
    [] before any call."""
    return list(getattr(_last, "skipped", []))


def find_regions(model: torch.nn.Module, args: tuple, kwargs: dict | None, target: str) -> list[Region]:
    """The model's fused regions worth extracting on its example inputs, most total time (count x time) first.

    Raises RegionError (one line) when the model does not export or the target is unknown. Regions that fail
    to extract are left out and listed, with their reasons, by `last_skipped()`."""
    platform, device = _device(target)
    _last.skipped = []
    graph, groups = capture_groups(model, args, kwargs)
    regions, skipped = _extract(graph, groups, (platform, device), type(model).__name__)
    _last.skipped = skipped
    return sorted(regions, key=lambda r: -r.count * r.time_ms)


def capture_groups(model: torch.nn.Module, args: tuple, kwargs: dict | None) -> tuple[CapturedGraph, list[Group]]:
    """The model's exported graph with the values at the boundaries of its groups worth extracting, and those
    groups (RegionError where it does not export); the swap-in (swap.py) finds its regions among them again."""
    groups: list[Group] = []

    def boundaries(graph: fx.Graph, weights: set[fx.Node]) -> set[fx.Node]:
        groups.extend(g for g in partition(graph, weights) if worth_extracting(g))
        return {n for g in groups for nodes in boundary(g, weights) for n in nodes}  # all a problem needs

    return capture(model, tuple(args), dict(kwargs or {}), keep=boundaries), groups


def _device(target: str) -> tuple[Platform, torch.device]:
    """The target's platform and the device regions are timed on (its current one; the host for cpu)."""
    try:
        platform = get_platform(target)
        return platform, platform.current_device() or platform.open_device(0)
    except (ValueError, DeviceMissing) as e:
        raise RegionError(f"target {target}: {e}") from None


def _extract(
    graph: CapturedGraph, groups: list[Group], target: tuple[Platform, torch.device], model_name: str
) -> tuple[list[Region], list[tuple[str, str]]]:
    skipped: list[tuple[str, str]] = []
    by_signature: dict[str, list[tuple[RegionCode, str]]] = {}
    for group in groups:
        region_kind = kind(group)
        try:
            code = region_code(group, region_kind, graph.values, graph.weights, model_name)
        except Exception as e:  # noqa: BLE001 - any failure skips this region, the rest go on
            skipped.append((f"{region_kind} at {group.nodes[0].name}", _reason(e)))
            continue
        by_signature.setdefault(code.signature, []).append((code, region_kind))
    regions, names = [], set()
    for signature, codes in by_signature.items():
        code, region_kind = codes[0]
        name = _unique(code.name, names)
        source = code.finish(name, len(codes))
        try:
            time_ms = _check_and_time(source, code, graph, target)
        except Exception as e:  # noqa: BLE001 - any failure skips this region, the rest go on
            skipped.append((name, _reason(e)))
            continue
        regions.append(Region(name, region_kind, signature, code.ops, len(codes), time_ms, source))
    return regions, skipped


def _reason(e: Exception) -> str:
    """One line: what went wrong (our own errors as they are, anything else with its type)."""
    text = str(e).strip().splitlines()[0][:300] if str(e).strip() else ""
    return text if isinstance(e, RegionSourceError) else f"{type(e).__name__}: {text}"


def _unique(name: str, used: set[str]) -> str:
    candidate, n = name, 2
    while candidate in used:
        candidate, n = f"{name}_{n}", n + 1
    used.add(candidate)
    return candidate


def problem_module(source: str, name: str = "region") -> types.ModuleType:
    """Execute a region's problem text as a private module."""
    module = types.ModuleType(f"kernelevolve_region_{name}")
    exec(compile(source, f"<region {name}>", "exec"), module.__dict__)
    return module


def model_with_weights(module: types.ModuleType, weights: list[torch.Tensor]) -> torch.nn.Module:
    """The problem's Model with the model's own weights in place of the drawn ones (w0, w1, ... in order)."""
    model = module.Model(*module.get_init_inputs())
    for i, value in enumerate(weights):
        getattr(model, f"w{i}").data = value.detach()
    return model.eval()


def _check_and_time(
    source: str, code: RegionCode, graph: CapturedGraph, target: tuple[Platform, torch.device]
) -> float:
    """Check the problem reproduces the region on the model's values; time it on the device."""
    module = problem_module(source, code.name)
    model = model_with_weights(module, [graph.values[w] for w in code.weights])
    inputs = [graph.values[a] for a in code.inputs]
    expected = [graph.values[o] for o in code.outputs]
    with torch.no_grad():
        out = model(*inputs)
    got = list(out) if isinstance(out, tuple) else [out]
    mismatch = outputs_mismatch(got, expected)
    if mismatch:
        raise RegionSourceError(f"the problem does not reproduce the region: {mismatch}")
    _, device = target
    model = model.to(device)
    inputs = [x.to(device) if isinstance(x, torch.Tensor) else x for x in inputs]
    with torch.no_grad():
        return wall_ms(lambda: model(*inputs), device, runs=REPEATS, warmups=WARMUP)


def outputs_mismatch(got: list[Any], expected: list[Any]) -> str:
    """'' when each output equals its expected value exactly or float64-close; else what differs."""
    if len(got) != len(expected):
        return f"{len(got)} outputs where the region has {len(expected)}"
    for i, (g, e) in enumerate(zip(got, expected)):
        if not isinstance(g, torch.Tensor) or g.shape != e.shape or g.dtype != e.dtype:
            return f"output {i} is {_what(g)}, the region's is {_what(e)}"
        if torch.equal(g, e):
            continue
        if not (g.is_floating_point() and torch.allclose(g.double(), e.double(), rtol=1e-6, atol=1e-9, equal_nan=True)):
            return f"output {i} differs (largest difference {(g.double() - e.double()).abs().max().item():.3g})"
    return ""


def _what(x: Any) -> str:
    return f"{x.dtype} {tuple(x.shape)}" if isinstance(x, torch.Tensor) else type(x).__name__
