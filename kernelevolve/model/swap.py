"""`kernelevolve.swap(model, DIR)`: the model rebuilt with the kernels a `kernelevolve model ... --search` saved in
DIR, without any search (docs/model.md, "Swap-in").

The swapped model is a copy of the model whose class is a subclass of the model's own (same submodules,
parameters and attributes, so its state_dict has the original names). Its forward runs, inside the operator
kernels' scope (kernels/enable.py, scoped), either the model's graph as `torch.export` gave it at the example
inputs with each region that won replaced by its kernel (rewrite.py), when the call's inputs and weights are
exactly those the graph was made for and the model is in eval mode; or else the model's own forward.
"""

from __future__ import annotations

import contextlib
import copy
import types
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch
from torch.export.graph_signature import InputKind, OutputKind
from torch.utils._pytree import tree_flatten, tree_map, tree_unflatten

from kernelevolve.kernels.enable import Enabled, EnableError, enable, read_entries, source_module
from kernelevolve.model.graph_capture import CapturedGraph, RegionError
from kernelevolve.model.region_file import INPUTS, KERNELS, REGIONS, STATE_DICT, RegionEntry, RegionFileError, read
from kernelevolve.model.regions import capture_groups, outputs_mismatch
from kernelevolve.model.rewrite import Occurrence, custom_op, occurrences, substitute, topological
from kernelevolve.problem.problem import tolerance


class SwapError(Exception):
    """The directory cannot be swapped in (missing, foreign, corrupt, or saved from another model); nothing was
    applied. The message says what and how to fix it."""


@dataclass
class RegionOutcome:
    name: str
    swapped: bool
    reason: str  # swapped: how the kernel won; else why the region runs its original nodes
    places: int = 0  # occurrences replaced in the graph


@dataclass
class SwapReport:
    """What `swap` applied: each region swapped or fallen back (with the reason), and the operators served."""

    folder: Path
    regions: list[RegionOutcome] = field(default_factory=list)
    operators: list[str] = field(default_factory=list)
    operators_reason: str = ""  # why the kernels folder serves nothing, where it could not be enabled

    def lines(self) -> list[str]:
        out = []
        for r in self.regions:
            where = f"swapped in at {r.places} place(s): {r.reason}" if r.swapped else f"original nodes: {r.reason}"
            out.append(f"region {r.name}: {where}")
        if self.operators:
            out.append(f"operators served inside the swapped forward: {', '.join(self.operators)}")
        if self.operators_reason:
            out.append(f"operators: ATen serves them all: {self.operators_reason}")
        return out


@dataclass
class Directory:
    folder: Path
    regions: list[RegionEntry]
    kernels: Path | None
    state: dict[str, torch.Tensor]
    args: tuple
    kwargs: dict[str, Any]


def read_directory(folder: Path) -> Directory:
    """Everything the directory holds, read and checked (no kernel run); SwapError otherwise."""
    if not folder.is_dir():
        raise SwapError(f"{folder}: no such directory (write one with `kernelevolve model ENTRY --search --out DIR`)")
    state_path, inputs_path = folder / STATE_DICT, folder / INPUTS
    if not state_path.is_file() or not inputs_path.is_file():
        raise SwapError(
            f"{folder}: not a swap directory (no {STATE_DICT} and {INPUTS}; `kernelevolve model ENTRY --search "
            "--out DIR` writes them): give the --out of such a search"
        )
    try:
        state = torch.load(state_path, weights_only=True)
        inputs = torch.load(inputs_path, weights_only=True)
    except Exception as e:  # noqa: BLE001 - whatever torch.load says, the file is unreadable
        raise SwapError(f"{folder}: corrupt {STATE_DICT} or {INPUTS} ({type(e).__name__}): search again") from None
    shaped = isinstance(inputs, (tuple, list)) and len(inputs) == 2 and isinstance(inputs[1], dict)
    if not isinstance(state, dict) or not all(isinstance(v, torch.Tensor) for v in state.values()) or not shaped:
        raise SwapError(f"{folder}: corrupt {STATE_DICT} or {INPUTS} (not a state_dict, not (args, kwargs))")
    return Directory(folder, _regions(folder / REGIONS), _kernels(folder / KERNELS), state, tuple(inputs[0]), inputs[1])


def _regions(folder: Path) -> list[RegionEntry]:
    if not folder.exists():
        return []
    entries = []
    for path in sorted(folder.iterdir()):
        if path.name.startswith(".") or path.name == "__pycache__":
            continue
        if not path.is_file() or path.suffix != ".py":
            raise SwapError(f"{path}: not a region file (a regions folder holds only written .py files): move it out")
        try:
            entries.append(read(path))
        except RegionFileError as e:
            raise SwapError(str(e)) from None
    return entries


def _kernels(folder: Path) -> Path | None:
    if not folder.exists():
        return None
    try:
        read_entries(folder)
    except EnableError as e:
        raise SwapError(str(e)) from None
    return folder


def check_model(model: torch.nn.Module, state: dict[str, torch.Tensor], folder: Path) -> None:
    """The model must be the one the directory was saved from: the same state_dict names, shapes and dtypes."""
    if not isinstance(model, torch.nn.Module):
        raise SwapError(f"swap takes the original nn.Module, not a {type(model).__name__}")
    own = model.state_dict()
    missing, extra = sorted(set(state) - set(own)), sorted(set(own) - set(state))
    differ = [k for k in state if k in own and (own[k].shape != state[k].shape or own[k].dtype != state[k].dtype)]
    if missing or extra or differ:
        what = "; ".join(
            f"{label} {', '.join(names[:3])}{' ...' if len(names) > 3 else ''}"
            for label, names in (("it lacks", missing), ("it has more:", extra), ("other shape or dtype:", differ))
            if names
        )
        raise SwapError(f"{folder} was saved from another model than this one ({what}): swap the model searched")


@dataclass
class RegionKernel:
    """A region's kernel called as the op calls it: the region's inputs, then its weights as w0, w1, ..."""

    module: torch.nn.Module
    inputs: int

    def __call__(self, *tensors: torch.Tensor) -> list[torch.Tensor]:
        weights = {f"w{i}": w for i, w in enumerate(tensors[self.inputs :])}
        out = torch.func.functional_call(self.module, weights, tuple(tensors[: self.inputs]))
        return list(out) if isinstance(out, (tuple, list)) else [out]


def load_kernel(entry: RegionEntry, place: Occurrence, captured: CapturedGraph, device: torch.device) -> RegionKernel:
    """The entry's kernel loaded on the device and checked on the values the model gave the region (the
    per-dtype tolerance of the problems); any failure raises, and the region keeps its original nodes."""
    if entry.device != device.type:
        raise RuntimeError(f"its kernel was proven on {entry.device}; the model is on {device.type}")
    module = source_module(f"kernelevolve_region_{entry.name}", entry.kernel)
    kernel = RegionKernel(module.ModelNew().to(device).eval(), len(place.inputs))
    expected = [captured.values[o] for o in place.outputs]
    with torch.no_grad():
        got = kernel(*(captured.values[a] for a in place.arguments))
    if len(got) != len(expected) or any(
        not isinstance(g, torch.Tensor) or g.shape != e.shape or g.dtype != e.dtype for g, e in zip(got, expected)
    ):
        raise RuntimeError(f"wrong outputs at swap-in: {outputs_mismatch(got, expected)}")
    for i, (g, e) in enumerate(zip(got, expected)):
        atol, rtol = tolerance(types.SimpleNamespace(), str(e.dtype).removeprefix("torch."))
        if not torch.allclose(g, e, atol=atol, rtol=rtol, equal_nan=True):
            worst = (g.double() - e.double()).abs().max().item()
            raise RuntimeError(f"wrong output {i} at swap-in (largest difference {worst:.3g}, atol {atol:g})")
    return kernel


class GraphRun:
    """The rewritten graph, and the guard that runs it only on what it was made for: eval mode, inputs of the
    example's structure, shapes, strides, dtypes and devices (and its other values), weights as they were."""

    def __init__(self, captured: CapturedGraph, model: torch.nn.Module, args: tuple, kwargs: dict[str, Any]) -> None:
        program = captured.program
        self.module = program.graph_module
        self.in_spec, self.out_spec = program.call_spec.in_spec, program.call_spec.out_spec
        specs = program.graph_signature.input_specs
        self.weights = [(s.kind, s.target) for s in specs if s.kind != InputKind.USER_INPUT]
        self.constants = dict(program.constants)
        self.user_keys = [_key(v) for v in tree_flatten((tuple(args), dict(kwargs)))[0]]
        self.weight_keys = [_key(w) for w in self._weights(model)]

    def _weights(self, model: torch.nn.Module) -> list[Any]:
        out = []
        for kind, name in self.weights:
            if kind == InputKind.PARAMETER:
                out.append(model.get_parameter(name))
            elif kind == InputKind.BUFFER:
                out.append(model.get_buffer(name))
            else:
                out.append(self.constants[name])
        return out

    def flat_inputs(self, model: torch.nn.Module, args: tuple, kwargs: dict[str, Any]) -> list[Any] | None:
        if model.training:
            return None
        leaves, spec = tree_flatten((tuple(args), dict(kwargs)))
        if spec != self.in_spec or [_key(v) for v in leaves] != self.user_keys:
            return None
        weights = self._weights(model)
        return [*weights, *leaves] if [_key(w) for w in weights] == self.weight_keys else None

    def run(self, flat: list[Any]) -> Any:
        return tree_unflatten(list(self.module(*flat)), self.out_spec)


def _key(value: Any) -> tuple:
    if isinstance(value, torch.Tensor):
        return ("tensor", tuple(value.shape), tuple(value.stride()), value.dtype, value.device)
    return ("value", type(value).__name__, repr(value))


def unsupported(captured: CapturedGraph) -> str:
    """Why the exported graph cannot stand in for the forward ('' when it can)."""
    signature = captured.program.graph_signature
    if any(s.kind != OutputKind.USER_OUTPUT for s in signature.output_specs):
        return "the forward writes its buffers or inputs (the graph returns them): the model's own forward runs"
    kinds = {InputKind.USER_INPUT, InputKind.PARAMETER, InputKind.BUFFER, InputKind.CONSTANT_TENSOR}
    if any(s.kind not in kinds for s in signature.input_specs):
        return "the graph takes inputs other than tensors and weights (tokens, script objects)"
    return ""


def rewrite(
    model: torch.nn.Module, entries: list[RegionEntry], args: tuple, kwargs: dict[str, Any]
) -> tuple[GraphRun | None, list[RegionOutcome]]:
    """The model's graph with each region whose kernel loads and passes its check replaced by the kernel; the
    others keep their nodes, with the reason. None where no region was swapped."""
    was_training = model.training
    model.eval()
    try:
        captured, groups = capture_groups(model, args, kwargs)
    except RegionError as e:
        return None, [RegionOutcome(e_.name, False, f"the model's graph: {e}") for e_ in entries]
    finally:
        model.train(was_training)
    why = unsupported(captured)
    if why:
        return None, [RegionOutcome(e.name, False, why) for e in entries]
    found = occurrences(captured, groups, type(model).__name__)
    device = next((t.device for t in tree_flatten((args, kwargs))[0] if isinstance(t, torch.Tensor)), None)
    outcomes = [_swap_region(e, found.get(e.signature, []), captured, device) for e in entries]
    if not any(o.swapped for o in outcomes):
        return None, outcomes
    graph = captured.program.graph_module.graph
    topological(graph)
    graph.lint()
    captured.program.graph_module.recompile()
    return GraphRun(captured, model, args, kwargs), outcomes


def _swap_region(
    entry: RegionEntry, places: list[Occurrence], captured: CapturedGraph, device: torch.device | None
) -> RegionOutcome:
    if not places:
        return RegionOutcome(entry.name, False, "not in this model's graph (another model, inputs or torch version)")
    try:
        kernel = load_kernel(entry, places[0], captured, device or torch.device("cpu"))
    except Exception as e:  # noqa: BLE001 - a kernel's own failure: its region keeps its nodes, the rest go on
        text = str(e).strip().splitlines()[0][:300] if str(e).strip() else ""
        return RegionOutcome(entry.name, False, f"its kernel failed at swap-in: {type(e).__name__}: {text}")
    op = custom_op(entry.name, kernel, places[0])
    for place in places:
        substitute(captured.graph, place, op)
    case = entry.case
    won = f"node {case.get('node', '?')}, {case.get('speedup_best') or 0:.2f}x over {case.get('baseline', '?')}"
    return RegionOutcome(entry.name, True, won, len(places))


class Swap:
    """A swapped model's own state: the report, the rewritten graph (or None) and the operators' scoped handle."""

    def __init__(self, report: SwapReport, graph: GraphRun | None, operators: Enabled | None) -> None:
        self.report, self.graph, self.operators = report, graph, operators

    def forward(self, model: torch.nn.Module, original: Any, args: tuple, kwargs: dict[str, Any]) -> Any:
        serving = self.operators is not None and not torch.compiler.is_compiling()
        with self.operators.serving() if serving else contextlib.nullcontext():
            flat = self.graph.flat_inputs(model, args, kwargs) if self.graph is not None else None
            return original(*args, **kwargs) if flat is None else self.graph.run(flat)


_classes: dict[type, type] = {}


def swapped_class(cls: type) -> type:
    """`Swapped<Name>`, a subclass of the model's class whose forward goes through its Swap."""
    if cls not in _classes:

        def forward(self: Any, *args: Any, **kwargs: Any) -> Any:
            return self._kernelevolve_swap.forward(self, super(subclass, self).forward, args, kwargs)

        subclass = type(f"Swapped{cls.__name__}", (cls,), {"forward": forward, "__module__": cls.__module__})
        _classes[cls] = subclass
    return _classes[cls]


def swap(model: torch.nn.Module, folder: str | Path, *, load_weights: bool = False) -> torch.nn.Module:
    """The model with DIR's kernels swapped in (a copy; the model itself is left as it is). load_weights: load
    the state_dict DIR holds (the weights it was searched with) instead of keeping the model's own. SwapError for
    a directory that cannot be swapped in, nothing applied; a kernel that fails falls back, as
    `swapped.kernelevolve_report` says."""
    folder = Path(folder)
    found = read_directory(folder)
    check_model(model, found.state, folder)
    swapped = copy.deepcopy(model)
    if load_weights:
        swapped.load_state_dict(found.state)
    device = next((p.device for p in swapped.parameters()), torch.device("cpu"))
    args, kwargs = tree_map(lambda v: v.to(device) if isinstance(v, torch.Tensor) else v, (found.args, found.kwargs))
    report = SwapReport(folder)
    graph, report.regions = rewrite(swapped, found.regions, args, kwargs) if found.regions else (None, [])
    operators = None
    if found.kernels is not None:
        try:
            operators = enable(found.kernels, scoped=True)
            report.operators = operators.operators
        except EnableError as e:
            report.operators_reason = str(e)
    swapped.__class__ = swapped_class(type(model))
    swapped._kernelevolve_swap = Swap(report, graph, operators)
    swapped.kernelevolve_report = report
    return swapped
