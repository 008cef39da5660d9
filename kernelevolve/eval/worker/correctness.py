"""The comparator: candidate output against reference output, with dtype-aware tolerances."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import torch
from torch.utils._pytree import tree_flatten

NORM_ERR_FLOOR = 1e-3


def norm_bound(rtol: float) -> float:
    """Bound on ||out - ref||_2 / ||ref||_2, checked beside the elementwise tolerance.

    Why: where every |ref| is near atol (tiny outputs) the elementwise test accepts a zero or constant output;
    this norm does not (a zero output scores 1, a constant one the reference's relative spread). Honest kernels
    differ from the reference by rounding only: ~1e-6 in this norm in float32, ~1e-3 in float16/bfloat16 (unit
    roundoff 5e-4 / 4e-3, averaged over the elements). 10 x rtol is 1e-3 at the float32 default and 0.1 at the
    half-precision default, ample room for both; the 1e-3 floor keeps a very tight rtol from rejecting honest
    float32 kernels whose tiny elements carry errors close to atol."""
    return max(10 * rtol, NORM_ERR_FLOOR)


@dataclass
class Comparison:
    ok: bool
    reason: str = ""
    max_abs_err: float = 0.0
    max_rel_err: float = 0.0
    norm_err: float = 0.0  # ||out - ref||_2 / ||ref||_2 over finite reference elements

    def merge(self, other: Comparison) -> Comparison:
        return Comparison(
            ok=self.ok and other.ok,
            reason=self.reason or other.reason,
            max_abs_err=max(self.max_abs_err, other.max_abs_err),
            max_rel_err=max(self.max_rel_err, other.max_rel_err),
            norm_err=max(self.norm_err, other.norm_err),
        )


def compare(out: Any, ref: Any, atol: float, rtol: float) -> Comparison:
    """Elementwise |out - ref| <= atol + rtol * |ref| on every leaf, the normalised error bound (norm_bound),
    plus structure, shape, dtype and NaN/Inf checks. max_rel_err is max |out - ref| / max(|ref|, atol)."""
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
    if r.is_complex():
        return _compare_masked(o, r, atol, rtol, where)
    # The common case, everything finite: few full passes, float32 work for float32 and narrower dtypes
    # (differences of float32 values are exact to rounding, far below any tolerance). A norm is finite
    # exactly when every element is and nothing overflows; otherwise the masked float64 path decides.
    work = torch.float64 if r.dtype == torch.float64 else torch.float32
    o_, r_ = o.detach().to(work), r.detach().to(work)
    ref_norm, out_norm = _norm(r_), _norm(o_)
    if not (math.isfinite(ref_norm) and math.isfinite(out_norm)):
        return _compare_masked(o, r, atol, rtol, where)
    diff = torch.sub(o_, r_).abs_()
    max_abs = float(diff.max())
    norm_err = _norm(diff) / ref_norm if ref_norm > 0 else 0.0  # an all-zero reference: elementwise decides
    r_abs = r_.abs()
    excess = torch.add(diff, r_abs, alpha=-rtol)  # |out - ref| - rtol |ref|, to compare with atol
    bad = int(torch.count_nonzero(excess > atol)) if float(excess.max()) > atol else 0
    del excess
    max_rel = float(diff.div_(r_abs.clamp_min_(max(atol, torch.finfo(work).tiny))).max())
    return _verdict(bad, r.numel(), max_abs, max_rel, norm_err, atol, rtol, where)


def _norm(t: torch.Tensor) -> float:
    return float(torch.linalg.vector_norm(t))


def _norm_ratio(diff: torch.Tensor, ref: torch.Tensor) -> float:
    ref_norm = float(torch.linalg.vector_norm(ref, dtype=torch.float64))
    if ref_norm == 0.0:
        return 0.0  # an all-zero reference: the elementwise test alone decides
    return float(torch.linalg.vector_norm(diff, dtype=torch.float64)) / ref_norm


def _compare_masked(o: torch.Tensor, r: torch.Tensor, atol: float, rtol: float, where: str) -> Comparison:
    """Outputs with NaN or Inf (or complex): placement must match, finite elements are compared."""
    o64, r64 = o.detach().double() if not o.is_complex() else o.detach(), r.detach().double()
    if r.is_complex():
        o64, r64 = o.detach().to(torch.complex128), r.detach().to(torch.complex128)
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
    norm_err = _norm_ratio(diff, r64.masked_fill(~finite, 0.0))
    return _verdict(bad, r.numel(), max_abs, max_rel, norm_err, atol, rtol, where)


def _verdict(
    bad: int, n: int, max_abs: float, max_rel: float, norm_err: float, atol: float, rtol: float, where: str
) -> Comparison:
    if bad:
        reason = (
            f"{where}{bad} of {n} elements outside atol={atol:g}, rtol={rtol:g} "
            f"(max abs err {max_abs:.3g}, max rel err {max_rel:.3g})"
        )
        return Comparison(False, reason, max_abs, max_rel, norm_err)
    limit = norm_bound(rtol)
    if not norm_err <= limit:
        reason = (
            f"{where}normalised error ||out - ref|| / ||ref|| = {norm_err:.3g} exceeds {limit:g} although every "
            f"element is within atol={atol:g} (tiny-output check)"
        )
        return Comparison(False, reason, max_abs, max_rel, norm_err)
    return Comparison(True, "", max_abs, max_rel, norm_err)


def snapshot(inputs: list[Any]) -> list[Any]:
    """Copies of the tensor inputs, to verify afterwards that the candidate did not modify them."""
    return [x.clone() if isinstance(x, torch.Tensor) else x for x in inputs]


def inputs_unchanged(inputs: list[Any], before: list[Any]) -> str:
    """'' when every tensor input still has its snapshot's shape and values, else which one changed."""
    for i, (x, b) in enumerate(zip(inputs, before)):
        if isinstance(b, torch.Tensor):
            if not isinstance(x, torch.Tensor) or x.shape != b.shape or x.dtype != b.dtype:
                return f"input {i} was modified by the candidate (shape or dtype changed)"
            if not torch.equal(x, b) and not (
                x.is_floating_point() and torch.equal(torch.nan_to_num(x), torch.nan_to_num(b))
            ):
                return f"input {i} was modified by the candidate"
    return ""
