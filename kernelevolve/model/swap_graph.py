"""The graph side of `kernelevolve.swap` (docs/model.md, "Swap-in"): the model's exported graph with each saved
region whose kernel loads and passes its check at swap time replaced by its custom op (rewrite.py), and the guard
that runs that graph only on the inputs and weights it was made for."""

from __future__ import annotations

import types
from dataclasses import dataclass
from typing import Any

import torch
from torch.export.graph_signature import InputKind, OutputKind
from torch.utils._pytree import tree_flatten, tree_unflatten

from kernelevolve.kernels.enable import source_module
from kernelevolve.model.graph_capture import CapturedGraph, RegionError
from kernelevolve.model.region_file import RegionEntry
from kernelevolve.model.regions import capture_groups, outputs_mismatch
from kernelevolve.model.rewrite import Occurrence, custom_op, occurrences, substitute, topological
from kernelevolve.problem.problem import tolerance


@dataclass
class RegionOutcome:
    name: str
    swapped: bool
    reason: str  # swapped: how the kernel won; else why the region runs its original nodes
    places: int = 0  # occurrences replaced in the graph


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
        op = custom_op(entry.name, kernel, places[0])
    except Exception as e:  # noqa: BLE001 - a kernel's own failure: its region keeps its nodes, the rest go on
        text = str(e).strip().splitlines()[0][:300] if str(e).strip() else ""
        return RegionOutcome(entry.name, False, f"its kernel failed at swap-in: {type(e).__name__}: {text}")
    for place in places:
        substitute(captured.graph, place, op)
    case = entry.case
    won = f"node {case.get('node', '?')}, {case.get('speedup_best') or 0:.2f}x over {case.get('baseline', '?')}"
    return RegionOutcome(entry.name, True, won, len(places))
