"""An ATen call as the kernel directory sees it: its arguments bound to the operator's schema, the pattern a
shape case proved a kernel on, and whether a call fits it (docs/aten.md "Kernels in a model: enable()").

Pure data and torch's schema objects only: the same pattern is written by the export (from a problem's inputs)
and matched by `enable` (from a live call), so both sides build it here.
"""

from __future__ import annotations

from typing import Any

Pattern = list[dict[str, Any]]  # one entry per schema argument: {"shape", "dtype", "layout"} or {"value"}


class CallError(Exception):
    """Arguments that do not bind to the operator's schema (a problem whose inputs are not the operator's)."""


def bind(schema: Any, args: tuple | list, kwargs: dict[str, Any]) -> list[Any]:
    """Every argument of the schema, in its order: given positionally, by name, or its default. torch passes a
    Python kernel only the arguments that differ from their defaults, so both sides compare full lists."""
    out = []
    for i, arg in enumerate(schema.arguments):
        if i < len(args):
            out.append(args[i])
        elif arg.name in kwargs:
            out.append(kwargs[arg.name])
        elif arg.has_default_value():
            out.append(arg.default_value)
        else:
            raise CallError(f"{schema.name} needs its argument {arg.name!r}, which was not given")
    extra = set(kwargs) - {a.name for a in schema.arguments}
    if len(args) > len(schema.arguments) or extra:
        raise CallError(f"{schema.name} takes {len(schema.arguments)} arguments; got more ({sorted(extra)})")
    return out


def describe(value: Any) -> dict[str, Any]:
    """One argument's entry: a tensor by shape, dtype and layout (contiguous, or its strides), anything else by
    its repr. Device is not in it: the dispatch key the kernel is registered for fixes the device."""
    import torch

    if isinstance(value, torch.Tensor):
        layout: Any = "contiguous" if value.is_contiguous() else list(value.stride())
        if value.layout != torch.strided:
            layout = str(value.layout)
        return {"shape": list(value.shape), "dtype": str(value.dtype).removeprefix("torch."), "layout": layout}
    return {"value": repr(value)}


def pattern(values: list[Any]) -> Pattern:
    return [describe(v) for v in values]


def merge(a: Pattern, b: Pattern) -> Pattern:
    """One pattern from two draws of a case: a size that differs between them (data-dependent) becomes None."""
    out = []
    for x, y in zip(a, b):
        if "shape" in x and "shape" in y and len(x["shape"]) == len(y["shape"]):
            out.append({**x, "shape": [p if p == q else None for p, q in zip(x["shape"], y["shape"])]})
        else:
            out.append(x)
    return out


def fits(proven: Pattern, call: Pattern) -> bool:
    """Whether a call's pattern is one the kernel was proven on (None in a proven shape matches any size)."""
    if len(proven) != len(call):
        return False
    for p, c in zip(proven, call):
        if "value" in p or "value" in c:
            if p.get("value", p) != c.get("value", c):
                return False
            continue
        if p["dtype"] != c["dtype"] or p["layout"] != c["layout"] or len(p["shape"]) != len(c["shape"]):
            return False
        if any(s is not None and s != t for s, t in zip(p["shape"], c["shape"])):
            return False
    return True


def as_tensors(schema: Any, values: list[Any]) -> list[Any]:
    """Python numbers where the schema has a Tensor: torch hands a Python kernel a wrapped number (`x + 2`) as the
    number, and the original kernel takes only a tensor there. A 0-dim tensor of the number's default dtype
    promotes as the wrapped number does."""
    import torch

    out = list(values)
    for i, arg in enumerate(schema.arguments):
        if i < len(out) and str(arg.type) == "Tensor" and isinstance(out[i], (bool, int, float, complex)):
            v = out[i]
            dtype = (
                torch.bool
                if isinstance(v, bool)
                else torch.int64
                if isinstance(v, int)
                else torch.get_default_dtype()
                if isinstance(v, float)
                else torch.complex64
                if torch.get_default_dtype() == torch.float32
                else torch.complex128
            )
            out[i] = torch.tensor(v, dtype=dtype)
    return out


def overload(operator: str) -> Any:
    """torch's OpOverload for 'aten::name[.overload]' (no overload: the default one); CallError if unknown."""
    import torch

    packet, _, name = operator.removeprefix("aten::").partition(".")
    try:
        return getattr(getattr(torch.ops.aten, packet), name or "default")
    except (AttributeError, RuntimeError):
        raise CallError(f"torch {torch.__version__} knows no operator {operator}") from None
