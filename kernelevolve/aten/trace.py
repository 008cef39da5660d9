"""The tracer: run a model and record every ATen operator it calls, with its arguments (shapes, dtypes, strides,
non-tensor values) and its share of the forward's (or the training step's) time (docs/aten.md, "The tracer").

The entry point is MODULE:FUNCTION, where FUNCTION() returns (model, example_inputs): example_inputs a tuple or
list of positional arguments, or a dict of keyword arguments. Operators are recorded below autograd by a
TorchDispatchMode (so composite operators appear as the operators they decompose into, and a training step's
backward operators appear too); times come from a second run under torch.profiler (self time per operator).
"""

from __future__ import annotations

import importlib
import json
import platform
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import torch
from torch.utils._python_dispatch import TorchDispatchMode

from kernelevolve.aten.spec import describe

SIGNATURE_LIMIT = 16  # distinct argument signatures kept per operator (the most called first)


class TraceError(Exception):
    """The entry cannot be traced: one line saying what is wrong and how to fix it."""


def overload_name(func: Any) -> str:
    """torch.ops.aten.add.Tensor -> 'aten::add.Tensor' (the default overload as '.default')."""
    name = func.name()
    return name if "." in name.split("::", 1)[-1] else f"{name}.default"


@dataclass
class Recording:
    """Per operator overload: calls, and calls per distinct argument signature (a JSON string)."""

    calls: Counter = field(default_factory=Counter)
    signatures: dict[str, Counter] = field(default_factory=dict)


class RecordingMode(TorchDispatchMode):
    """Records each ATen call it sees; `keep_values` keeps small integer tensors' contents (indices, targets).
    `on_call(name, func, args, kwargs)`, when given, sees every call too (the generator keeps the tensors)."""

    def __init__(self, keep_values: bool = False, on_call: Callable[..., None] | None = None) -> None:
        super().__init__()
        self.recording = Recording()
        self.keep_values = keep_values
        self.on_call = on_call

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):  # noqa: ANN001 - torch's protocol
        kwargs = kwargs or {}
        name = overload_name(func)
        try:
            signature = json.dumps({"args": describe(list(args), self.keep_values), "kwargs": describe(kwargs)})
        except TypeError:  # an argument the spec cannot say (a generator, an opaque object): counted, not kept
            signature = None
        self.recording.calls[name] += 1
        if signature is not None:
            self.recording.signatures.setdefault(name, Counter())[signature] += 1
        if self.on_call is not None:
            self.on_call(name, func, args, kwargs)
        return func(*args, **kwargs)


def load_entry(entry: str) -> tuple[torch.nn.Module, tuple[Any, ...], dict[str, Any]]:
    """MODULE:FUNCTION -> (model, args, kwargs); TraceError with one line for each way it can be wrong."""
    module_name, sep, function_name = entry.partition(":")
    if not sep or not module_name or not function_name:
        raise TraceError(f"{entry!r}: expected MODULE:FUNCTION, e.g. kernelevolve.aten.recipes:gpt2")
    try:
        module = importlib.import_module(module_name)
    except Exception as e:  # noqa: BLE001 - any import failure is the entry's
        raise TraceError(f"{entry}: cannot import {module_name} ({type(e).__name__}: {e})") from e
    function = getattr(module, function_name, None)
    if not callable(function):
        raise TraceError(f"{entry}: {module_name} has no function {function_name}")
    try:
        made = function()
    except Exception as e:  # noqa: BLE001
        raise TraceError(f"{entry}: {function_name}() raised {type(e).__name__}: {e}") from e
    if not (isinstance(made, (tuple, list)) and len(made) == 2 and isinstance(made[0], torch.nn.Module)):
        raise TraceError(
            f"{entry}: {function_name}() must return (model, example_inputs) with model an nn.Module, "
            f"got {type(made).__name__}"
        )
    model, inputs = made
    if isinstance(inputs, dict):
        return model, (), dict(inputs)
    if isinstance(inputs, (tuple, list)):
        return model, tuple(inputs), {}
    return model, (inputs,), {}


def _float_outputs(out: Any) -> list[torch.Tensor]:
    """Floating tensors in a model's output (tensors, tuples, lists, dicts and dict-like ModelOutputs)."""
    if isinstance(out, torch.Tensor):
        return [out] if out.is_floating_point() else []
    if isinstance(out, dict) or hasattr(out, "values") and callable(out.values):
        return [t for v in out.values() for t in _float_outputs(v)]
    if isinstance(out, (tuple, list)):
        return [t for v in out for t in _float_outputs(v)]
    return []


def _step(model: torch.nn.Module, args: tuple, kwargs: dict, train: bool) -> None:
    """One forward (no grad), or one training step: forward, a loss over the floating outputs, backward."""
    if not train:
        with torch.no_grad():
            model(*args, **kwargs)
        return
    model.zero_grad(set_to_none=True)
    outputs = [t for t in _float_outputs(model(*args, **kwargs)) if t.requires_grad]
    if not outputs:
        raise TraceError("the model's output has no floating tensor that requires grad: nothing to train")
    sum(t.float().square().mean() for t in outputs).backward()


def profile_step(model: torch.nn.Module, args: tuple, kwargs: dict, train: bool, device: str, steps: int = 1) -> Any:
    """`steps` steps under one torch.profiler session (CPU, and CUDA on a CUDA model): the profile the tracer's
    shares and `kernelevolve model`'s per-call times (kernelevolve/model/profile.py) are read from."""
    from torch.profiler import ProfilerActivity, profile

    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if device == "cuda" else [])
    with profile(activities=activities) as prof:
        for _ in range(steps):
            _step(model, args, kwargs, train)
        if device == "cuda":
            torch.cuda.synchronize()
    return prof


def _profile_shares(model: torch.nn.Module, args: tuple, kwargs: dict, train: bool, device: str) -> dict[str, float]:
    """Self time per operator name ('aten::add', no overload), summed over one step, as shares of the total."""
    prof = profile_step(model, args, kwargs, train, device)
    own: Counter = Counter()
    for event in prof.key_averages():
        if not event.key.startswith("aten::"):
            continue
        own[event.key] += event.self_device_time_total if device == "cuda" else event.self_cpu_time_total
    total = sum(own.values())
    return {k: v / total for k, v in own.items()} if total else {}


def trace_model(
    model: torch.nn.Module, args: tuple = (), kwargs: dict | None = None, train: bool = False
) -> dict[str, Any]:
    """The trace of one step of `model` on its inputs (docs/aten.md, "Trace files")."""
    kwargs = kwargs or {}
    model.train(train)
    device = next((t.device.type for t in [*model.parameters(), *model.buffers()]), "cpu")
    mode = RecordingMode()
    try:
        _step(model, args, kwargs, train)  # warm-up: lazy initialisation stays out of the trace and the times
        with mode:
            _step(model, args, kwargs, train)
        shares = _profile_shares(model, args, kwargs, train, device)
    except TraceError:
        raise
    except Exception as e:  # noqa: BLE001 - the model's own failure
        raise TraceError(f"the model failed while traced: {type(e).__name__}: {e}") from e
    rec = mode.recording
    packet_calls: Counter = Counter()
    for name, n in rec.calls.items():
        packet_calls[name.rsplit(".", 1)[0]] += n
    operators = []
    for name, n in rec.calls.most_common():
        packet = name.rsplit(".", 1)[0]
        signatures = rec.signatures.get(name, Counter()).most_common(SIGNATURE_LIMIT)
        operators.append(
            {
                "name": name,
                "calls": n,
                "share": round(shares.get(packet, 0.0) * n / packet_calls[packet], 6),
                "signatures": [{**json.loads(s), "calls": c} for s, c in signatures],
            }
        )
    return {
        "step": "train" if train else "forward",
        "device": device,
        "time_device": device,
        "torch": torch.__version__,
        "python": platform.python_version(),
        "calls": sum(rec.calls.values()),
        "operators": operators,
    }


def trace_entry(entry: str, train: bool = False) -> dict[str, Any]:
    """Load MODULE:FUNCTION and trace it; the trace names its entry."""
    model, args, kwargs = load_entry(entry)
    trace = trace_model(model, args, kwargs, train)
    return {"model": entry, **trace}


def dumps(trace: dict[str, Any]) -> str:
    """A trace as JSON, one operator a line: compact, and a new trace's diff reads by operator."""
    head = json.dumps({k: v for k, v in trace.items() if k != "operators"})
    operators = ",\n".join(json.dumps(op, separators=(",", ":")) for op in trace["operators"])
    return f'{head[:-1]}, "operators": [\n{operators}\n]}}\n'
