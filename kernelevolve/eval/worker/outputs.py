"""What a candidate returns must be plain data of its own: materialised torch.Tensors (or plain numbers), sharing
no memory with an input or a reference output. A tensor subclass, a lazy wrapper or a tensor carrying
instance attributes can answer the comparator's own calls (`.double()`, `-`, `==`) with the reference; an
output that is the reference, or an input the candidate computed into, passes every value check.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch
from torch.utils._pytree import tree_flatten

PLAIN_SCALARS = (int, float, bool, complex, str, type(None))


def not_plain(out: Any) -> str:
    """'' when every leaf of the output is a plain materialised tensor or a plain number, else why not."""
    leaves, _ = tree_flatten(out)
    for i, leaf in enumerate(leaves):
        where = f"output {i}" if len(leaves) > 1 else "the output"
        kind = type(leaf)
        if kind in PLAIN_SCALARS:
            continue
        if kind is not torch.Tensor:
            return f"{where} is a {kind.__module__}.{kind.__qualname__}, not a plain torch.Tensor"
        why = _tensor_fault(leaf)
        if why:
            return f"{where} {why}"
    return ""


def _tensor_fault(t: torch.Tensor) -> str:
    if t.__dict__:
        return f"carries instance attributes ({', '.join(sorted(t.__dict__)[:3])}) that shadow tensor methods"
    if t.is_meta or t.device.type == "meta":
        return "is a meta tensor (no data)"
    if t.layout != torch.strided or t.is_nested:
        return f"has layout {t.layout}, not a strided tensor"
    is_wrapped = getattr(torch._C._functorch, "is_functorch_wrapped_tensor", None)
    if is_wrapped is not None and is_wrapped(t):
        return "is a functorch-wrapped tensor"
    if t.numel() and t.untyped_storage().data_ptr() == 0:
        return "has no materialised storage"
    return ""


@dataclass(frozen=True)
class Span:
    start: int
    end: int
    device: str
    label: str


def spans(tensors: list[Any], label: str) -> list[Span]:
    """Storage byte ranges of the tensors in a list (labelled 'input 0', ...) or of one output's leaves."""
    out = []
    for i, x in enumerate(tensors):
        for leaf in tree_flatten(x)[0]:
            span = _span(leaf, label.format(i=i))
            if span is not None:
                out.append(span)
    return out


def _span(t: Any, label: str) -> Span | None:
    if type(t) is not torch.Tensor or t.numel() == 0:
        return None
    storage = t.untyped_storage()
    start, size = storage.data_ptr(), storage.nbytes()
    if not start or not size:
        return None
    return Span(start, start + size, str(t.device), label)


def aliased(out: Any, protected: list[Span]) -> str:
    """'' when no output tensor's storage overlaps a protected range, else which ones overlap."""
    leaves, _ = tree_flatten(out)
    for i, leaf in enumerate(leaves):
        mine = _span(leaf, "")
        if mine is None:
            continue
        for p in protected:
            if p.device == mine.device and mine.start < p.end and p.start < mine.end:
                where = f"output {i}" if len(leaves) > 1 else "the output"
                return f"{where} shares memory with {p.label}"
    return ""
