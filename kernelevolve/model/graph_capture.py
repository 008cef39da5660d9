"""A model's forward as an ATen graph with every value it computes (docs/model.md, "Regions").

The graph comes from `torch.export` (non-strict) decomposed to the core ATen opset, attention operators kept
whole; every node carries its real shape and dtype (`meta["val"]`). The values come from running that graph once
on the example inputs with an `fx.Interpreter` that keeps each node's result: the regions' real inputs, outputs and
parameters.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import torch
import torch.fx as fx
from torch.export import ExportedProgram
from torch.export.graph_signature import InputKind

from kernelevolve.model.partition import PRESERVED


class RegionError(Exception):
    """The model cannot be searched for regions: one line saying why and what to do."""


@dataclass
class CapturedGraph:
    """The exported program, each node's value on the example inputs, and the state-dict name of each
    placeholder that is a parameter, buffer or constant."""

    program: ExportedProgram
    values: dict[fx.Node, Any]
    weights: dict[fx.Node, str] = field(default_factory=dict)

    @property
    def graph(self) -> fx.Graph:
        return self.program.graph


def export_model(model: torch.nn.Module, args: tuple, kwargs: dict) -> ExportedProgram:
    """torch.export (non-strict), decomposed to core ATen with attention operators kept whole."""
    if not isinstance(model, torch.nn.Module):
        raise RegionError(f"expected an nn.Module, got {type(model).__name__}")
    try:
        program = torch.export.export(model, tuple(args), dict(kwargs), strict=False)
    except Exception as e:  # noqa: BLE001 - whatever export raises, the user gets one line
        first = str(e).strip().splitlines()[0] if str(e).strip() else ""
        raise RegionError(
            f"the model does not export with torch.export ({type(e).__name__}: {first[:300]}); fused regions need "
            "its graph: make forward traceable (no Python branches on tensor values, no .item() or .tolist() "
            "steering control flow), or profile its single operators instead"
        ) from e
    table = torch.export.default_decompositions()
    for name in PRESERVED:
        packet = getattr(torch.ops.aten, name, None)
        for overload in packet.overloads() if packet is not None else ():
            table.pop(getattr(packet, overload), None)
    return program.run_decompositions(table)


class _Keeper(fx.Interpreter):
    """Runs the graph and keeps the values of the nodes wanted (every node's when None); the others are freed
    after their last use, as a forward frees them."""

    def __init__(self, module: fx.GraphModule, wanted: set[fx.Node] | None) -> None:
        super().__init__(module, garbage_collect_values=wanted is not None)
        self.wanted = wanted
        self.kept: dict[fx.Node, Any] = {}

    def run_node(self, n: fx.Node) -> Any:
        value = super().run_node(n)
        if self.wanted is None or n in self.wanted:
            self.kept[n] = value
        return value


def _placeholder_values(program: ExportedProgram, args: tuple, kwargs: dict) -> tuple[list[Any], dict[str, str]]:
    """The lifted graph's inputs in order (weights, then the flattened user inputs), and the weight placeholders'
    state-dict names."""
    leaves, spec = torch.utils._pytree.tree_flatten((tuple(args), dict(kwargs)))
    if spec != program.call_spec.in_spec:  # export flattens the inputs as pytree does; say so if that ever changes
        raise RegionError(f"the exported program takes its inputs as {program.call_spec.in_spec}, not as given")
    user = iter(leaves)
    values, weights = [], {}
    for spec in program.graph_signature.input_specs:
        if spec.kind == InputKind.USER_INPUT:
            values.append(next(user))
            continue
        if spec.kind in (InputKind.PARAMETER, InputKind.BUFFER) and spec.target in program.state_dict:
            values.append(program.state_dict[spec.target])
        else:
            values.append(program.constants[spec.target])
        weights[spec.arg.name] = spec.target
    return values, weights


def capture(
    model: torch.nn.Module,
    args: tuple,
    kwargs: dict | None = None,
    keep: Callable[[fx.Graph, set[fx.Node]], set[fx.Node]] | None = None,
) -> CapturedGraph:
    """Export the model and run its graph once on the example inputs, keeping the values of the nodes
    `keep(graph, weight placeholders)` names (weights are always kept), or every value without it (a whole
    forward's activations: memory a large model may not have)."""
    kwargs = dict(kwargs or {})
    program = export_model(model, args, kwargs)
    inputs, weight_names = _placeholder_values(program, args, kwargs)
    weights = {n: weight_names[n.name] for n in program.graph.nodes if n.op == "placeholder" and n.name in weight_names}
    wanted = None if keep is None else keep(program.graph, set(weights)) | set(weights)
    keeper = _Keeper(program.graph_module, wanted)
    with torch.no_grad():
        keeper.run(*inputs)
    return CapturedGraph(program, keeper.kept, weights)
