"""One ATen call as JSON and back: what the tracer records of an argument and what a generated problem's
get_inputs() rebuilds from it (docs/aten.md, "Call specs").

A tensor is {"t": shape, "dtype": name} plus, where they apply, "stride" and "offset" (a layout other than the
contiguous one), "range" ([low, high] of its values), "values" (integer and boolean contents small enough to keep
exactly: indices, targets, masks) and "sorted" (sorted along its last dimension). Dtypes, devices, layouts and
memory formats are {"dtype": ...}-style markers; numbers, strings, None and lists stay as they are.
"""

from __future__ import annotations

import math
from typing import Any

import torch

from kernelevolve.problem.inputs import laid_out

EXACT_LIMIT = 1024  # integer and boolean tensors with at most this many elements keep their values


def _dtype_name(dtype: torch.dtype) -> str:
    return str(dtype).removeprefix("torch.")


def describe_tensor(t: torch.Tensor, keep_values: bool = True) -> dict[str, Any]:
    """A tensor's spec; values only for integer/boolean tensors (when keep_values) small enough to keep."""
    spec: dict[str, Any] = {"t": list(t.shape), "dtype": _dtype_name(t.dtype)}
    if t.numel() > 1 and not t.is_contiguous():
        spec["stride"] = list(t.stride())
    if t.storage_offset():
        spec["offset"] = int(t.storage_offset())
    if t.numel() == 0 or t.is_complex() or t.is_meta:
        return spec
    flat = t.detach().reshape(-1)
    if t.dtype == torch.bool or not t.is_floating_point():
        if keep_values and t.numel() <= EXACT_LIMIT:
            spec["values"] = flat.tolist()
            return spec
    finite = flat[torch.isfinite(flat)] if t.is_floating_point() else flat
    if finite.numel():
        lo, hi = finite.min().item(), finite.max().item()
        spec["range"] = [float(lo), float(hi)] if t.is_floating_point() else [int(lo), int(hi)]
    if t.dim() >= 1 and t.shape[-1] > 1 and t.dtype != torch.bool and bool((t[..., 1:] >= t[..., :-1]).all()):
        spec["sorted"] = True
    return spec


def describe(value: Any, keep_values: bool = True) -> Any:
    """Any argument of an ATen call as JSON."""
    if isinstance(value, torch.Tensor):
        return describe_tensor(value, keep_values)
    if isinstance(value, (list, tuple)):
        return [describe(v, keep_values) for v in value]
    if isinstance(value, dict):
        return {k: describe(v, keep_values) for k, v in value.items()}
    if isinstance(value, torch.dtype):
        return {"dtype_arg": _dtype_name(value)}
    if isinstance(value, torch.device):
        return {"device_arg": value.type}
    if isinstance(value, torch.layout):
        return {"layout_arg": str(value).removeprefix("torch.")}
    if isinstance(value, torch.memory_format):
        return {"memory_format_arg": str(value).removeprefix("torch.")}
    if isinstance(value, float) and not math.isfinite(value):
        return {"float_arg": repr(value)}
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    raise TypeError(f"cannot describe an argument of type {type(value).__name__}")


def _is_tensor_spec(spec: Any) -> bool:
    return isinstance(spec, dict) and "t" in spec and "dtype" in spec


def _draw(spec: dict[str, Any], n: int, dtype: torch.dtype) -> torch.Tensor:
    """n values of `dtype` within the spec's range (uniform), for the elements a layout reaches."""
    if "values" in spec:
        return torch.tensor(spec["values"], dtype=dtype)
    if dtype == torch.bool:
        return torch.rand(n) < 0.5
    lo, hi = spec.get("range", [-1.0, 1.0] if dtype.is_floating_point else [0, 10])
    if dtype.is_floating_point or dtype.is_complex:
        return (torch.rand(n, dtype=torch.float64) * (hi - lo) + lo).to(dtype)
    return torch.randint(int(lo), int(hi) + 1, (n,), dtype=torch.int64).to(dtype)


def build_tensor(spec: dict[str, Any]) -> torch.Tensor:
    """A tensor matching the spec: its shape, dtype and layout (strides, offset), its values drawn as the spec
    says (on the default device: a GPU's when get_inputs runs under one)."""
    dtype = getattr(torch, spec["dtype"])
    shape = spec["t"]
    numel = math.prod(shape)
    dense = _draw(spec, numel, dtype)
    if spec.get("sorted") and dense.dim() and shape:
        dense = dense.reshape(shape).sort(dim=-1).values.reshape(-1)
    dense = dense.to(torch.get_default_device())
    stride, offset = spec.get("stride"), spec.get("offset", 0)
    if stride is None and not offset:
        return dense.reshape(shape)
    stride = stride or list(torch.empty(shape, device="meta").stride())
    extent = 1 + sum((n - 1) * s for n, s in zip(shape, stride)) if numel else 0
    overlapping = any(s == 0 and n > 1 for n, s in zip(shape, stride))
    if overlapping and "values" not in spec:  # an expanded tensor: its storage drawn, then viewed
        base = _draw(spec, offset + extent, dtype).to(dense.device)
        return base.as_strided(shape, stride, offset)
    if overlapping:  # kept values in a layout that repeats elements: contiguous instead
        return dense.reshape(shape)
    return laid_out(dense.reshape(shape), stride, offset)


def build(spec: Any) -> Any:
    """The argument a spec describes (describe's inverse; tensor values drawn anew)."""
    if _is_tensor_spec(spec):
        return build_tensor(spec)
    if isinstance(spec, list):
        return [build(s) for s in spec]
    if isinstance(spec, dict):
        if "dtype_arg" in spec:
            return getattr(torch, spec["dtype_arg"])
        if "device_arg" in spec:
            return torch.get_default_device()
        if "layout_arg" in spec:
            return getattr(torch, spec["layout_arg"])
        if "memory_format_arg" in spec:
            return getattr(torch, spec["memory_format_arg"])
        if "float_arg" in spec:
            return float(spec["float_arg"])
        return {k: build(v) for k, v in spec.items()}
    return spec


def build_call(call: dict[str, Any]) -> list[Any]:
    """A generated problem's inputs for one call: its positional arguments, then its keyword arguments as one
    dict (the problem's forward passes them on as **kwargs)."""
    return [*build(call["args"]), build(call.get("kwargs", {}))]


def tensors_in(spec: Any) -> list[dict[str, Any]]:
    """The tensor specs among a call's arguments."""
    if _is_tensor_spec(spec):
        return [spec]
    if isinstance(spec, list):
        return [t for s in spec for t in tensors_in(s)]
    if isinstance(spec, dict):
        return [t for v in spec.values() for t in tensors_in(v)]
    return []


def contiguous(spec: Any) -> Any:
    """The spec with every tensor in the contiguous layout (its stride and offset dropped)."""
    if _is_tensor_spec(spec):
        return {k: v for k, v in spec.items() if k not in ("stride", "offset")}
    if isinstance(spec, list):
        return [contiguous(s) for s in spec]
    if isinstance(spec, dict):
        return {k: contiguous(v) for k, v in spec.items()}
    return spec
