"""A region of an exported graph as an ordinary problem file (docs/model.md, "Regions").

The problem's `Model.forward` makes the region's own ATen calls, in the graph's order with the graph's
arguments, so it computes exactly what the region computes in the model. The weights the region reads are the
model's shapes with values drawn (seeded) within each weight's range; the inputs are rebuilt by `get_inputs()` from
call specs (kernelevolve/aten/spec.py) of the values the region saw. The signature is the problem without those
ranges and names: two occurrences with equal signatures are one problem.
"""

from __future__ import annotations

import hashlib
import math
import operator
import re
from collections.abc import Collection
from dataclasses import dataclass
from typing import Any

import torch
import torch.fx as fx

from kernelevolve.aten.spec import describe_tensor
from kernelevolve.aten.trace import overload_name
from kernelevolve.model.partition import Group, compute_nodes, op_base

_SHORT = {
    "native_layer_norm": "layernorm", "scaled_dot_product_attention": "sdpa", "_embedding_bag": "embedding_bag",
    "_softmax": "softmax", "_log_softmax": "log_softmax", "native_group_norm": "groupnorm",
    "_native_batch_norm_legit_no_training": "batchnorm", "native_batch_norm": "batchnorm", "_to_copy": "cast",
}  # fmt: skip
# Exactly commutative (IEEE addition and multiplication are; promotion and broadcasting are symmetric): written with
# the region's own values first, so `a + b` and `b + a` are one problem.
_COMMUTATIVE = {
    "aten::add.Tensor", "aten::mul.Tensor", "aten::maximum.default", "aten::minimum.default", "aten::eq.Tensor",
    "aten::ne.Tensor", "aten::logical_and.default", "aten::logical_or.default", "aten::bitwise_and.Tensor",
    "aten::bitwise_or.Tensor",
}  # fmt: skip
_LAYOUT_KEYS = ("t", "dtype", "stride")  # what a signature keeps of a tensor spec (not its offset in a storage)


class RegionSourceError(Exception):
    """The region cannot be written as a problem (an input that is not a tensor, an argument with no literal)."""


@dataclass
class RegionCode:
    """One occurrence of a region as problem text, plus what a caller needs to run it on the model's values."""

    name: str
    signature: str
    ops: list[str]
    source: str
    inputs: list[fx.Node]  # forward's arguments, in order
    weights: list[fx.Node]  # the placeholders read as parameters, in order (w0, w1, ...)
    outputs: list[fx.Node]

    def finish(self, name: str, count: int) -> str:
        """The problem text under its final name (unique among the model's regions), saying how often the
        region occurs in one forward."""
        return self.source.replace("{name}", name, 1).replace("{count}", str(count), 1)


def boundary(group: Group, weights: Collection[fx.Node]) -> tuple[list[fx.Node], list[fx.Node], list[fx.Node]]:
    """The region's inputs (values from outside it), the weights it reads, and its outputs (values used outside),
    each in graph order."""
    inside = set(group.nodes)
    external = list(dict.fromkeys(a for n in group.nodes for a in n.all_input_nodes if a not in inside))
    params = [a for a in external if a in weights]
    inputs = [a for a in external if a not in weights]
    outputs = [n for n in group.nodes if any(u not in inside for u in n.users)]
    return inputs, params, outputs


class _Writer:
    def __init__(self, names: dict[fx.Node, str]) -> None:
        self.names = names
        self.needs_device = False

    def arg(self, a: Any) -> str:
        if isinstance(a, fx.Node):
            return self.names[a]
        if isinstance(a, (list, tuple)):
            inner = ", ".join(self.arg(x) for x in a)
            return f"[{inner}]" if isinstance(a, list) else f"({inner}{',' if len(a) == 1 else ''})"
        if isinstance(a, torch.device):
            self.needs_device = True
            return "device"
        if isinstance(a, (torch.dtype, torch.layout, torch.memory_format)):
            return str(a)
        if isinstance(a, float) and not math.isfinite(a):
            return f'float("{a}")'
        if a is None or isinstance(a, (bool, int, float, str)):
            return repr(a)
        raise RegionSourceError(f"an argument of type {type(a).__name__} ({a!r:.60}) has no literal form")

    def line(self, node: fx.Node) -> str:
        target = self.names[node]
        if node.target is operator.getitem:
            return f"{target} = {self.arg(node.args[0])}[{node.args[1]!r}]"
        packet = node.target.overloadpacket
        call = f"torch.ops.{packet._qualified_op_name.replace('::', '.')}.{node.target._overloadname}"
        args = list(node.args)
        if overload_name(node.target) in _COMMUTATIVE and len(args) == 2 and not node.kwargs:
            args.sort(key=lambda a: not (isinstance(a, fx.Node) and self.names[a].startswith("v")))
        parts = [self.arg(a) for a in args] + [f"{k}={self.arg(v)}" for k, v in node.kwargs.items()]
        return f"{target} = {call}({', '.join(parts)})"


def _body(group: Group, inputs: list[fx.Node], params: list[fx.Node], outputs: list[fx.Node]) -> tuple[str, str]:
    """forward's signature line and body (canonical names: x<i> inputs, self.w<i> weights, v<i> values)."""
    names = {a: f"x{i}" for i, a in enumerate(inputs)} | {p: f"self.w{i}" for i, p in enumerate(params)}
    names |= {n: f"v{i}" for i, n in enumerate(group.nodes)}
    writer = _Writer(names)
    lines = [writer.line(n) for n in group.nodes]
    if writer.needs_device:
        first = names[inputs[0]] if inputs else names[params[0]]
        lines.insert(0, f"device = {first}.device")
    result = ", ".join(names[o] for o in outputs)
    lines.append(f"return {result}" if len(outputs) == 1 else f"return ({result},)")
    header = f"def forward(self{''.join(f', x{i}' for i in range(len(inputs)))}):"
    return header, "\n".join(f"        {line}" for line in lines)


def _spec(value: Any, what: str) -> dict[str, Any]:
    if not isinstance(value, torch.Tensor):
        raise RegionSourceError(f"{what} is a {type(value).__name__}, not a tensor: the problem's inputs are tensors")
    return describe_tensor(value.detach().cpu() if value.device.type != "meta" else value)


def region_name(group: Group, outputs: list[fx.Node]) -> str:
    """A readable, file-system-safe name: the distinct operators (at most three; `attention` for a
    matmul-softmax-matmul block), then the output's last size."""
    stems = list(dict.fromkeys(_SHORT.get(op_base(n), op_base(n).lstrip("_")) for n in compute_nodes(group)))
    stems = ["attention"] if group.attention else stems
    shape = getattr(outputs[0].meta.get("val"), "shape", None) if outputs else None
    size = f"_{shape[-1]}" if shape else ""
    text = "_".join(stems[:3]) + ("_etc" if len(stems) > 3 else "") + size
    return re.sub(r"[^a-z0-9_]+", "_", text.lower()).strip("_")[:64] or "region"


_TEMPLATE = '''"""Region `{name}` ({kind}) of {model}: {ops_text}.

Generated by kernelevolve.model.regions (docs/model.md, "Regions"): forward makes the region's own ATen calls,
with the model's arguments, at the shapes one forward of the model saw; occurs {count} time(s) in that forward.
Weights are the model's shapes, drawn (seeded) within each weight's range; inputs are drawn from call specs of the
values the region saw (kernelevolve/aten/spec.py).
"""

import torch
import torch.nn as nn

from kernelevolve.aten.spec import build

DTYPE = {dtype}  # the harness casts floating inputs and weights to it: the region's own floating dtype
PARAMETERS = {params}
PARAMETER_NAMES = {param_names}  # the weights' names in the model's state_dict (first occurrence)
INPUTS = {inputs}
# Where the first occurrence sits in the model's exported graph (node names): forward's inputs, then its outputs.
GRAPH_NODES = {graph_nodes}


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(0)
            for name, spec in PARAMETERS.items():
                value = build(spec)
                if value.is_floating_point():
                    self.register_parameter(name, nn.Parameter(value))
                else:
                    self.register_buffer(name, value)

    {header}
{body}


def get_inputs():
    return [build(spec) for spec in INPUTS]


def get_init_inputs():
    return []
'''


def region_code(
    group: Group, kind: str, values: dict[fx.Node, Any], weights: dict[fx.Node, str], model: str
) -> RegionCode:
    """The problem text of one occurrence, its signature and name."""
    inputs, params, outputs = boundary(group, weights)
    if not outputs:
        raise RegionSourceError("the region's results are used nowhere")
    header, body = _body(group, inputs, params, outputs)
    param_specs = {f"w{i}": _spec(values[p], f"weight {weights[p]}") for i, p in enumerate(params)}
    input_specs = [_spec(values[a], f"input {a.name}") for a in inputs]
    ops = list(dict.fromkeys(overload_name(n.target) for n in compute_nodes(group)))
    dtype = _floating_dtype([*param_specs.values(), *input_specs])
    layout = [{k: s[k] for k in _LAYOUT_KEYS if k in s} for s in [*param_specs.values(), *input_specs]]
    signature = hashlib.sha256(f"{header}\n{body}\n{layout!r}".encode()).hexdigest()[:16]
    name = region_name(group, outputs)
    source = _TEMPLATE.format(
        name="{name}",
        kind=kind,
        model=model,
        dtype=f"torch.{dtype}",
        ops_text=", ".join(ops),
        count="{count}",
        params=_literal(param_specs),
        param_names=repr({f"w{i}": weights[p] for i, p in enumerate(params)}),
        inputs=_literal(input_specs),
        graph_nodes=repr({"inputs": [a.name for a in inputs], "outputs": [o.name for o in outputs]}),
        header=header,
        body=body,
    )
    return RegionCode(name, signature, ops, source, inputs, params, outputs)


def _floating_dtype(specs: list[dict[str, Any]]) -> str:
    """The one floating dtype of the region's inputs and weights (float32 when it has none)."""
    floating = {s["dtype"] for s in specs if getattr(torch, s["dtype"]).is_floating_point}
    if len(floating) > 1:
        raise RegionSourceError(
            f"floating inputs and weights of several dtypes ({', '.join(sorted(floating))}): a problem casts all "
            "of them to its one DTYPE"
        )
    return floating.pop() if floating else "float32"


def _literal(value: Any) -> str:
    """A spec literal, one entry a line when there are several."""
    if isinstance(value, dict) and len(value) > 1:
        return "{\n" + "".join(f"    {k!r}: {v!r},\n" for k, v in value.items()) + "}"
    if isinstance(value, list) and len(value) > 1:
        return "[\n" + "".join(f"    {v!r},\n" for v in value) + "]"
    return repr(value)
