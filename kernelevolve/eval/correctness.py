"""The comparator: candidate output against reference output, with dtype-aware tolerances."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import torch
from torch.utils._pytree import tree_flatten


@dataclass
class Comparison:
    ok: bool
    reason: str = ""
    max_abs_err: float = 0.0
    max_rel_err: float = 0.0

    def merge(self, other: Comparison) -> Comparison:
        return Comparison(
            ok=self.ok and other.ok,
            reason=self.reason or other.reason,
            max_abs_err=max(self.max_abs_err, other.max_abs_err),
            max_rel_err=max(self.max_rel_err, other.max_rel_err),
        )


def compare(out: Any, ref: Any, atol: float, rtol: float) -> Comparison:
    """Elementwise |out - ref| <= atol + rtol * |ref| on every leaf, plus structure, shape, dtype and
    NaN/Inf checks. max_rel_err is max |out - ref| / max(|ref|, atol)."""
    out_leaves, out_spec = tree_flatten(out)
    ref_leaves, ref_spec = tree_flatten(ref)
    if len(out_leaves) != len(ref_leaves):
        return Comparison(False, f"output has {len(out_leaves)} values, the reference {len(ref_leaves)}")
    result = Comparison(True)
    for i, (o, r) in enumerate(zip(out_leaves, ref_leaves)):
        where = f"output {i}: " if len(ref_leaves) > 1 else ""
        result = result.merge(_compare_leaf(o, r, atol, rtol, where))
    return result


def _compare_leaf(o: Any, r: Any, atol: float, rtol: float, where: str) -> Comparison:
    if not isinstance(r, torch.Tensor):
        if isinstance(r, (int, float)) and isinstance(o, (int, float)):
            err = abs(float(o) - float(r))
            ok = math.isclose(float(o), float(r), rel_tol=rtol, abs_tol=atol)
            return Comparison(ok, "" if ok else f"{where}{o!r} != {r!r}", err, err / max(abs(r), atol))
        ok = o == r
        return Comparison(bool(ok), "" if ok else f"{where}{o!r} != {r!r}")
    if not isinstance(o, torch.Tensor):
        return Comparison(False, f"{where}expected a tensor, got {type(o).__name__}")
    if o.shape != r.shape:
        return Comparison(False, f"{where}shape {tuple(o.shape)} != expected {tuple(r.shape)}")
    if o.dtype != r.dtype:
        return Comparison(False, f"{where}dtype {o.dtype} != expected {r.dtype}")
    if o.device.type != r.device.type:
        return Comparison(False, f"{where}device {o.device} != expected {r.device}")
    if r.numel() == 0:
        return Comparison(True)
    if not r.is_floating_point() and not r.is_complex():
        bad = int((o != r).sum())
        if bad:
            return Comparison(False, f"{where}{bad} of {r.numel()} elements differ", float("inf"), float("inf"))
        return Comparison(True)
    o64, r64 = o.detach().double(), r.detach().double()
    ref_nan, out_nan = torch.isnan(r64), torch.isnan(o64)
    if bool((ref_nan != out_nan).any()):
        n = int((ref_nan != out_nan).sum())
        return Comparison(
            False, f"{where}NaN in {n} places where the reference has none (or the reverse)", float("nan"), float("nan")
        )
    ref_inf, out_inf = torch.isinf(r64), torch.isinf(o64)
    if bool((ref_inf != out_inf).any()) or bool((r64[ref_inf] != o64[ref_inf]).any()):
        return Comparison(
            False, f"{where}Inf where the reference is finite (or the reverse)", float("inf"), float("inf")
        )
    finite = ~(ref_nan | ref_inf)
    diff = (o64 - r64).abs().masked_fill(~finite, 0.0)
    max_abs = float(diff.max())
    max_rel = float((diff / r64.abs().clamp_min(atol)).max())
    bound = atol + rtol * r64.abs().masked_fill(~finite, 0.0)
    bad = int((diff > bound).sum())
    if bad:
        reason = (
            f"{where}{bad} of {r.numel()} elements outside atol={atol:g}, rtol={rtol:g} "
            f"(max abs err {max_abs:.3g}, max rel err {max_rel:.3g})"
        )
        return Comparison(False, reason, max_abs, max_rel)
    return Comparison(True, "", max_abs, max_rel)


def snapshot(inputs: list[Any]) -> list[Any]:
    """Copies of the tensor inputs, to verify afterwards that the candidate did not modify them."""
    return [x.clone() if isinstance(x, torch.Tensor) else x for x in inputs]


def inputs_unchanged(inputs: list[Any], before: list[Any]) -> str:
    """'' when every tensor input still equals its snapshot, else which one changed."""
    for i, (x, b) in enumerate(zip(inputs, before)):
        if isinstance(b, torch.Tensor):
            if (
                not isinstance(x, torch.Tensor)
                or x.shape != b.shape
                or not torch.equal(x, b)
                and not (x.is_floating_point() and torch.equal(torch.nan_to_num(x), torch.nan_to_num(b)))
            ):
                return f"input {i} was modified by the candidate"
    return ""
