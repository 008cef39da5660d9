"""Profile a model's forward on its target: every ATen call at the level the tracer records (below autograd,
composites decomposed), grouped by operator and signature, each group's time over the forward from torch.profiler,
and the forward's wall time eager and, when asked, under torch.compile (docs/model.md, "The profile").

A group is one (functional operator, signature) pair: the call's shapes, dtypes, layouts and non-tensor arguments,
without the tensors' value ranges (those are merged: the widest range seen), so that the same operator called at the
same shapes by several layers is one row and one problem. The profiler is read per call: its events at the
recording mode's level (the first event on each path from a root that names an operator the mode saw, with its
inclusive time: the kernels it launched itself) line up one to one with the recorded calls, in order. Where they do
not (a model whose forward changes from run to run), each operator's time is split over its groups by calls, as the
tracer splits it by overload, and the profile says so.
"""

from __future__ import annotations

import json
import statistics
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import torch

from kernelevolve.aten.select import functional_name
from kernelevolve.aten.spec import describe
from kernelevolve.aten.trace import RecordingMode, profile_step
from kernelevolve.model.entry import LoadedModel, ModelError
from kernelevolve.platforms import for_device

PROFILE_RUNS = 3  # profiled forwards; each call's time is the mean over them
WALL_RUNS = 10  # timed forwards for the wall time (the median)
CONTENDED = 1.5  # the operators' profiled time this many times the wall time or more: said in a note
VALUE_KEYS = ("range", "sorted")  # what a tensor spec says of its values: merged over a group's calls
# Not part of a group's signature: the values, and where in its storage a tensor starts (rows of one table
# selected in turn are one signature; the problem keeps the first call's offset)
UNGROUPED = (*VALUE_KEYS, "offset")


@dataclass
class OpGroup:
    """Calls of one operator with one signature over the forward."""

    operator: str  # the functional overload ('aten::add.Tensor'; in-place and out= forms folded in)
    called: list[str]  # the overloads as called
    signature: str  # the call spec without value ranges, as JSON: what makes calls one group
    call: dict[str, Any]  # the call spec, with the widest value ranges seen
    calls: int = 0
    time_ms: float = 0.0  # all its calls together, over one forward


@dataclass
class Profile:
    """One forward of a model on a target, by operator group."""

    target: str
    groups: list[OpGroup]
    operators_ms: float  # the recorded calls' time over the forward: the table's denominator
    eager_ms: float  # the forward's wall time, eager (the median of WALL_RUNS)
    compiled_ms: float | None = None  # the same under torch.compile, when asked and where it compiled
    attribution: str = "per call"
    notes: list[str] = field(default_factory=list)
    other_calls: int = 0  # calls whose arguments a spec cannot say (counted in operators_ms, in no group)


def shapes_only(spec: Any) -> Any:
    """A call spec without what its tensors' values were (their ranges, whether sorted) and their storage
    offsets."""
    if isinstance(spec, dict):
        return {k: shapes_only(v) for k, v in spec.items() if not ("t" in spec and k in UNGROUPED)}
    if isinstance(spec, list):
        return [shapes_only(v) for v in spec]
    return spec


def merge_values(a: Any, b: Any) -> Any:
    """Two specs of one signature as one: each tensor's range the union of both, sorted where both are."""
    if isinstance(a, list) and isinstance(b, list):
        return [merge_values(x, y) for x, y in zip(a, b)]
    if not (isinstance(a, dict) and isinstance(b, dict)):
        return a
    merged = {k: merge_values(v, b.get(k)) for k, v in a.items() if k not in VALUE_KEYS}
    if "t" in a and "range" in a and "range" in b:
        low, high = min(a["range"][0], b["range"][0]), max(a["range"][1], b["range"][1])
        merged["range"] = [low, high]
    if "t" in a and a.get("sorted") and b.get("sorted"):
        merged["sorted"] = True
    return merged


def _record(model: torch.nn.Module, args: tuple, kwargs: dict) -> list[tuple[str, dict[str, Any] | None]]:
    """Every ATen call of one forward, in order: (overload, call spec or None where an argument cannot be said)."""
    calls: list[tuple[str, dict[str, Any] | None]] = []

    def on_call(name: str, func: Any, call_args: tuple, call_kwargs: dict) -> None:
        try:
            spec = {"args": describe(list(call_args), False), "kwargs": describe(call_kwargs, False)}
        except TypeError:
            spec = None
        calls.append((name, spec))

    with torch.no_grad(), RecordingMode(on_call=on_call):
        model(*args, **kwargs)
    return calls


def _start(event: Any) -> float:
    return event.time_range.start


def mode_level_times(events: list[Any], operators: set[str], device: str) -> list[tuple[str, float]]:
    """(operator name, milliseconds) of each profiler event at the recording mode's level, in order: the first
    event on each path from a root whose name is an operator the mode saw, with its inclusive time (device time on
    cuda); events below it ran inside that operator's kernel and are its time."""
    found: list[tuple[str, float]] = []
    stack = sorted((e for e in events if e.cpu_parent is None), key=_start, reverse=True)
    while stack:
        event = stack.pop()
        if event.name in operators:
            inclusive = event.device_time_total if device == "cuda" else event.cpu_time_total
            found.append((event.name, inclusive / 1000.0))
        else:
            stack.extend(sorted(event.cpu_children, key=_start, reverse=True))
    return found


def _packet(overload: str) -> str:
    """'aten::add.Tensor' -> 'aten::add', as the profiler names events."""
    return overload.rsplit(".", 1)[0]


def _call_times(loaded: LoadedModel, calls: list[tuple[str, Any]]) -> tuple[list[float], str]:
    """Each recorded call's mean time over PROFILE_RUNS profiled forwards (after one more in the same session:
    a session's first calls pay for its start), and how it was attributed."""
    device = "cuda" if loaded.target in ("cuda", "rocm") else "cpu"
    names = [_packet(name) for name, _ in calls]
    prof = profile_step(loaded.model, loaded.args, loaded.kwargs, False, device, steps=1 + PROFILE_RUNS)
    seen = mode_level_times(list(prof.events()), set(names), device)
    if [n for n, _ in seen] == names * (1 + PROFILE_RUNS):
        runs = [seen[i * len(names) : (i + 1) * len(names)] for i in range(1, 1 + PROFILE_RUNS)]
        return [sum(run[i][1] for run in runs) / PROFILE_RUNS for i in range(len(names))], "per call"
    by_name: Counter = Counter()
    for name, ms in seen:
        by_name[name] += ms / (1 + PROFILE_RUNS)
    counts = Counter(names)
    return [by_name[n] / counts[n] for n in names], (
        "by operator: the profiled forwards' calls did not line up with the recorded ones (a forward that "
        "changes between runs), so each operator's time is split over its signatures by calls"
    )


def _groups(calls: list[tuple[str, dict | None]], times: list[float]) -> tuple[list[OpGroup], int]:
    """The calls grouped by (functional operator, signature), most time first; and how many had no spec."""
    groups: dict[tuple[str, str], OpGroup] = {}
    functional: dict[str, str] = {}
    unsaid = 0
    for (name, spec), ms in zip(calls, times):
        if spec is None:
            unsaid += 1
            continue
        op = functional.setdefault(name, functional_name(name))
        spec = {"args": spec["args"], "kwargs": {k: v for k, v in spec["kwargs"].items() if k != "out"}}
        signature = json.dumps(shapes_only(spec))
        group = groups.get((op, signature))
        if group is None:
            group = groups[(op, signature)] = OpGroup(op, [], signature, spec)
        else:
            group.call = merge_values(group.call, spec)
        if name not in group.called:
            group.called.append(name)
        group.calls += 1
        group.time_ms += ms
    return sorted(groups.values(), key=lambda g: -g.time_ms), unsaid


def wall_ms(forward: Callable[[], Any], device: str | torch.device, runs: int | None = None, warmups: int = 1) -> float:
    """The median wall time of `runs` (WALL_RUNS) calls after `warmups`, in milliseconds, the device synchronised
    around each (the platform's own synchronize): the one clock of the model's table, for the forward and for each
    region alike, so that a region's share is of the same kind of time as the forward's."""
    where = torch.device(device)
    synchronize = for_device(where).synchronize
    samples = []
    with torch.no_grad():
        for _ in range(warmups):
            forward()
        for _ in range(runs or WALL_RUNS):
            synchronize(where)
            start = time.perf_counter()
            forward()
            synchronize(where)
            samples.append((time.perf_counter() - start) * 1000.0)
    return statistics.median(samples)


def _compiled_ms(loaded: LoadedModel, device: str) -> tuple[float | None, str | None]:
    """The forward's wall time under torch.compile (default mode), or None and why it did not compile."""
    try:
        compiled = torch.compile(loaded.model)
        return wall_ms(lambda: compiled(*loaded.args, **loaded.kwargs), device), None
    except Exception as e:  # noqa: BLE001 - a model torch.compile cannot take is said, not fatal
        first = str(e).strip().splitlines()[0] if str(e).strip() else ""
        return None, f"torch.compile failed on the model ({type(e).__name__}: {first[:200]})"


def profile_model(loaded: LoadedModel, compiled: bool = False) -> Profile:
    """The forward's operator groups and times on the loaded model's target."""
    device = "cuda" if loaded.target in ("cuda", "rocm") else "cpu"
    model, args, kwargs = loaded.model, loaded.args, loaded.kwargs
    try:
        with torch.no_grad():
            model(*args, **kwargs)  # warm-up: lazy initialisation stays out of the record and the times
        calls = _record(model, args, kwargs)
        times, attribution = _call_times(loaded, calls)
        eager = wall_ms(lambda: model(*args, **kwargs), device)
    except Exception as e:  # noqa: BLE001 - the model's own failure
        raise ModelError(f"{loaded.entry}: the model failed while profiled: {type(e).__name__}: {e}") from e
    if not calls:
        raise ModelError(f"{loaded.entry}: the model's forward called no ATen operator: nothing to profile")
    groups, unsaid = _groups(calls, times)
    profile = Profile(loaded.target, groups, sum(times), eager, attribution=attribution, other_calls=unsaid)
    if attribution != "per call":
        profile.notes.append(f"times attributed {attribution}")
    if unsaid:
        profile.notes.append(
            f"{unsaid} calls have an argument a call spec cannot say (a generator, an opaque object): their time "
            "counts in the operators' time, in no row"
        )
    if profile.operators_ms > CONTENDED * eager:
        profile.notes.append(
            f"the operators' profiled time is {profile.operators_ms / eager:.1f}x the forward's wall time: the "
            "profiler's own cost, or a contended host (on the cpu, threads waiting for cores); the shares compare "
            "rows, the end-to-end figures overstate"
        )
    if compiled:
        profile.compiled_ms, why = _compiled_ms(loaded, device)
        if why:
            profile.notes.append(why)
    return profile
