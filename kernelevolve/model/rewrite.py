"""The graph side of the swap-in (docs/model.md, "Swap-in"): a saved region found again in the model's exported
graph, its kernel registered as a `torch.library` custom op, and the region's nodes replaced by a call to it.

The op's fake impl gives the outputs the region's nodes gave at the model's shapes (so torch.compile traces
around the op without running it); its backward is the region's original nodes' (`torch.func.vjp` of them), so
gradients are ATen's. The graph is the static one `torch.export` gave at the example inputs: the swapped model
(swap.py) runs it only on inputs like those, so each op runs only at the shapes its kernel won at.
"""

from __future__ import annotations

import itertools
import operator
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch
import torch.fx as fx

from kernelevolve.model.graph_capture import CapturedGraph
from kernelevolve.model.partition import Group, kind
from kernelevolve.model.region_source import region_code

_ids = itertools.count()  # custom op names are process-wide: each swap's ops get fresh ones


@dataclass
class Occurrence:
    """One place a region sits in the graph: its nodes, and its inputs, weights and outputs in the problem's order
    (x0, x1, ..., w0, w1, ...; the outputs as forward returns them)."""

    nodes: list[fx.Node]
    inputs: list[fx.Node]
    weights: list[fx.Node]
    outputs: list[fx.Node]

    @property
    def arguments(self) -> list[fx.Node]:
        return [*self.inputs, *self.weights]


def occurrences(captured: CapturedGraph, groups: list[Group], model_name: str) -> dict[str, list[Occurrence]]:
    """The graph's groups by their region signature (as regions.py computes it); a group that cannot be written
    as a problem is no region and is left out."""
    found: dict[str, list[Occurrence]] = {}
    for group in groups:
        try:
            code = region_code(group, kind(group), captured.values, captured.weights, model_name)
        except Exception:  # noqa: BLE001 - regions.py skips such a group too: it was never searched
            continue
        found.setdefault(code.signature, []).append(Occurrence(group.nodes, code.inputs, code.weights, code.outputs))
    return found


def reference(occurrence: Occurrence) -> fx.GraphModule:
    """The region's own nodes as a module of their own: (inputs..., weights...) -> tuple of outputs."""
    graph = fx.Graph()
    env: dict[fx.Node, fx.Node] = {}
    for i, node in enumerate(occurrence.inputs):
        env[node] = graph.placeholder(f"x{i}")
    for i, node in enumerate(occurrence.weights):
        env[node] = graph.placeholder(f"w{i}")
    for node in occurrence.nodes:
        env[node] = graph.node_copy(node, env.__getitem__)
    graph.output(tuple(env[o] for o in occurrence.outputs))
    return fx.GraphModule(torch.nn.Module(), graph)


def custom_op(name: str, kernel: Callable[..., list[torch.Tensor]], occurrence: Occurrence) -> Any:
    """The kernel as `kernelevolve::<name>_<n>`: tensors in (the region's inputs, then weights), its outputs out,
    each with the layout the region's nodes gave it (a copy where the kernel's differs or aliases an input)."""
    metas = [o.meta["val"] for o in occurrence.outputs]
    layouts = [(tuple(m.shape), tuple(m.stride()), m.dtype) for m in metas]
    argument_list = ", ".join(f"Tensor a{i}" for i in range(len(occurrence.arguments)))
    returns = "Tensor" if len(layouts) == 1 else f"({', '.join('Tensor' for _ in layouts)})"
    original = reference(occurrence)

    def returned(values: list[torch.Tensor]) -> Any:
        return values[0] if len(values) == 1 else tuple(values)

    def impl(*tensors: torch.Tensor) -> Any:
        outs = kernel(*tensors)
        storages = {t.untyped_storage().data_ptr() for t in tensors}
        return returned([_in_layout(o, layout, storages) for o, layout in zip(outs, layouts)])

    def fake(*tensors: torch.Tensor) -> Any:
        device = tensors[0].device if tensors else metas[0].device
        return returned([torch.empty_strided(s, st, dtype=d, device=device) for s, st, d in layouts])

    op = torch.library.custom_op(f"kernelevolve::{name}_{next(_ids)}", impl, mutates_args=(),
                                 schema=f"({argument_list}) -> {returns}")  # fmt: skip
    op.register_fake(fake)
    op.register_autograd(_backward(original), setup_context=_setup_context)
    return op._opoverload


def _in_layout(out: torch.Tensor, layout: tuple, storages: set[int]) -> torch.Tensor:
    shape, stride, dtype = layout
    if tuple(out.shape) != shape or out.dtype != dtype:
        raise RuntimeError(f"the kernel returned {out.dtype} {tuple(out.shape)} where the region gives {dtype} {shape}")
    if tuple(out.stride()) == stride and out.untyped_storage().data_ptr() not in storages:
        return out
    return torch.empty_strided(shape, stride, dtype=dtype, device=out.device).copy_(out)


def _setup_context(ctx: Any, inputs: tuple, output: Any) -> None:
    ctx.save_for_backward(*inputs)


def _backward(original: fx.GraphModule) -> Callable[..., tuple]:
    """The gradients of the region's original nodes at the saved inputs (floating inputs only; None for others)."""

    def backward(ctx: Any, *grads: torch.Tensor) -> tuple:
        saved = ctx.saved_tensors
        floating = [i for i, t in enumerate(saved) if t.is_floating_point()]

        def region(*differentiable: torch.Tensor) -> tuple:
            values = list(saved)
            for i, value in zip(floating, differentiable):
                values[i] = value
            return original(*values)

        with torch.enable_grad():
            outs, vjp = torch.func.vjp(region, *(saved[i] for i in floating))
        cotangents = tuple(g if g is not None else torch.zeros_like(o) for g, o in zip(grads, outs))
        found = dict(zip(floating, vjp(cotangents)))
        return tuple(found.get(i) for i in range(len(saved)))

    return backward


def substitute(graph: fx.Graph, occurrence: Occurrence, op: Any) -> None:
    """The occurrence's nodes replaced by one call of `op` (and a getitem per output where it has several)."""
    inside = set(occurrence.nodes)
    with graph.inserting_before(occurrence.nodes[0]):
        call = graph.call_function(op, tuple(occurrence.arguments))
        count = len(occurrence.outputs)
        results = [graph.call_function(operator.getitem, (call, i)) for i in range(count)] if count > 1 else [call]
    for old, new in zip(occurrence.outputs, results):
        new.meta["val"] = old.meta.get("val")
        old.replace_all_uses_with(new, delete_user_cb=lambda user: user not in inside)
    for node in reversed(occurrence.nodes):
        graph.erase_node(node)


def topological(graph: fx.Graph) -> None:
    """Reorder the graph so each node follows its inputs, keeping the order it had wherever it may: a call put
    where its region began can have inputs made later, or users earlier, than that."""
    placed: set[fx.Node] = set()
    order: list[fx.Node] = []
    for start in list(graph.nodes):
        stack = [(start, False)]
        while stack:
            node, ready = stack.pop()
            if node in placed:
                continue
            if ready:
                placed.add(node)
                order.append(node)
                continue
            stack.append((node, True))
            stack.extend((a, False) for a in reversed(node.all_input_nodes) if a not in placed)
    anchor = order[0]
    for node in order[1:]:
        if anchor.next is not node:
            anchor.append(node)
        anchor = node
