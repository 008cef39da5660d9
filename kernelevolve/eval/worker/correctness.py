"""The comparators: a candidate's output against the float64 oracle within the measured budget (the default
rule), against the reference within a fixed tolerance (a problem's TOLERANCE, the fallback), or KernelBench's."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import torch
from torch.utils._pytree import tree_flatten

from kernelevolve.eval.rules import BUDGET_MULTIPLE
from kernelevolve.eval.worker import trees
from kernelevolve.eval.worker.oracle import CHUNK, LeafBudget, Oracle

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
    error_ratio: float | None = None  # budgeted comparisons: the error over the reference's own rounding error

    def merge(self, other: Comparison) -> Comparison:
        ratios = [r for r in (self.error_ratio, other.error_ratio) if r is not None]
        return Comparison(
            ok=self.ok and other.ok,
            reason=self.reason or other.reason,
            max_abs_err=max(self.max_abs_err, other.max_abs_err),
            max_rel_err=max(self.max_rel_err, other.max_rel_err),
            norm_err=max(self.norm_err, other.norm_err),
            error_ratio=max(ratios) if ratios else None,
        )


RULES = ("measured", "tolerance", "kernelbench")
KERNELBENCH_TOL = 1e-2  # KernelBench's evaluator: torch.allclose(out, ref, atol=1e-2, rtol=1e-2) on get_inputs()


@dataclass(frozen=True)
class Criterion:
    """How a case's outputs are judged. "measured": against the float64 oracle within `multiple` x the reference's
    own rounding error (where a trial has no oracle, the fixed atol/rtol decide it); "tolerance": the problem's
    TOLERANCE, elementwise and in norm; "kernelbench": atol = rtol = 1e-2 elementwise only, as KernelBench."""

    rule: str
    atol: float
    rtol: float
    multiple: float = BUDGET_MULTIPLE

    def check(self, out: Any, ref: Any, oracle: Oracle | None = None, budgets: list | None = None) -> Comparison:
        """`oracle`: the trial's float64 result and budgets; `budgets` alone: compare against the working-precision
        `ref` itself, whose own error then counts once more (multiple + 1)."""
        if self.rule == "measured" and oracle is not None:
            return compare_budget(out, oracle.exact, ref, oracle.budgets, self.multiple, self.atol, self.rtol)
        if self.rule == "measured" and budgets is not None:
            return compare_budget(out, ref, ref, budgets, self.multiple + 1, self.atol, self.rtol)
        return compare(out, ref, self.atol, self.rtol, norm=self.rule != "kernelbench")

    def describe(self) -> str:
        if self.rule == "kernelbench":
            return f"kernelbench: atol = rtol = {self.atol:g} elementwise, given inputs only"
        if self.rule == "tolerance":
            return f"the problem's TOLERANCE: atol={self.atol:g}, rtol={self.rtol:g}"
        return f"measured: within {self.multiple:g}x the reference's own rounding error, plus one ulp, against float64"


KERNELBENCH = Criterion("kernelbench", KERNELBENCH_TOL, KERNELBENCH_TOL)


def compare(out: Any, ref: Any, atol: float, rtol: float, norm: bool = True) -> Comparison:
    """Elementwise |out - ref| <= atol + rtol * |ref| on every leaf, the normalised error bound (norm_bound;
    norm=False leaves it out, as torch.allclose does), plus structure, shape, dtype and NaN/Inf checks.
    max_rel_err is max |out - ref| / max(|ref|, atol)."""
    if (none := _returned_none(out, ref)) is not None:
        return none
    out_leaves = tree_flatten(out)[0]
    ref_leaves = tree_flatten(ref)[0]
    if len(out_leaves) != len(ref_leaves):
        return Comparison(False, f"output has {len(out_leaves)} values, the reference {len(ref_leaves)}")
    result = Comparison(True)
    for i, (o, r) in enumerate(zip(out_leaves, ref_leaves)):
        where = f"output {i}: " if len(ref_leaves) > 1 else ""
        result = result.merge(_compare_leaf(o, r, atol, rtol, where, norm))
    return result


def compare_budget(
    out: Any, exact: Any, ref: Any, budgets: list[LeafBudget | None], multiple: float, atol: float, rtol: float
) -> Comparison:
    """Every floating leaf against the float64 result `exact`, elementwise |out - exact| <= multiple x the
    reference's own largest error + one ulp of the exact value, and in norm ||out - exact|| / ||exact|| <=
    multiple x the reference's own normalised error + one ulp; NaN and Inf placed where the working-precision
    reference `ref` has them. Leaves without a budget (integers, Python numbers) are compared as `compare` does."""
    if (none := _returned_none(out, ref)) is not None:
        return none
    out_leaves, exact_leaves, ref_leaves = tree_flatten(out)[0], tree_flatten(exact)[0], tree_flatten(ref)[0]
    if len(out_leaves) != len(ref_leaves):
        return Comparison(False, f"output has {len(out_leaves)} values, the reference {len(ref_leaves)}")
    result = Comparison(True)
    for i, (o, e, r, b) in enumerate(zip(out_leaves, exact_leaves, ref_leaves, budgets)):
        where = f"output {i}: " if len(ref_leaves) > 1 else ""
        if b is None:
            result = result.merge(_compare_leaf(o, r, atol, rtol, where))
            continue
        wrong = _mismatch(o, r, where)
        if wrong is None and not (_finite_norm(o) and _finite_norm(r)):
            wrong = _placement(o, r, where)
        result = result.merge(wrong or _budget_leaf(o, e, r, b, multiple, where))
    return result


def _returned_none(out: Any, ref: Any) -> Comparison | None:
    """forward's None, said as such whatever the reference returns (a tuple's leaves would otherwise be counted)."""
    if out is not None or ref is None:
        return None
    if isinstance(ref, torch.Tensor):
        what = f"a {tuple(ref.shape)} tensor"
    else:
        what = f"a {type(ref).__name__} of {len(tree_flatten(ref)[0])} values"
    return Comparison(False, f"forward returned None where the reference returns {what}: did it miss a `return`?")


def _finite_norm(t: torch.Tensor) -> bool:
    work = torch.float64 if t.dtype == torch.float64 else torch.float32
    return t.numel() == 0 or math.isfinite(_norm(t.detach().to(work)))


def _placement(o: torch.Tensor, r: torch.Tensor, where: str) -> Comparison | None:
    """NaN and Inf of the output where the working-precision reference has them (None: they match)."""
    ref_nan, out_nan = torch.isnan(r), torch.isnan(o)
    if bool((ref_nan != out_nan).any()):
        n = int((ref_nan != out_nan).sum())
        return Comparison(
            False, f"{where}NaN in {n} places where the reference has none (or the reverse)", float("nan"), float("nan")
        )
    ref_inf, out_inf = torch.isinf(r), torch.isinf(o)
    if bool((ref_inf != out_inf).any()) or bool((r[ref_inf] != o[ref_inf]).any()):
        return Comparison(
            False, f"{where}Inf where the reference is finite (or the reverse)", float("inf"), float("inf")
        )
    return None


def _budget_leaf(
    o: torch.Tensor, e: torch.Tensor, r: torch.Tensor, b: LeafBudget, multiple: float, where: str
) -> Comparison:
    """One floating leaf against its budget, in chunks (float64 temporaries stay bounded on large outputs);
    elements the reference does not hold finite are left to the placement check."""
    if r.numel() == 0:
        return Comparison(True, error_ratio=0.0)
    of, ef, rf = o.detach().reshape(-1), e.detach().reshape(-1), r.detach().reshape(-1)
    finite = _finite_norm(r) and _finite_norm(e)
    bad, elem_ratio, max_abs, max_exact, sq_diff, sq_exact = 0, 0.0, 0.0, 0.0, 0.0, 0.0
    for start in range(0, ef.numel(), CHUNK):
        stop = start + CHUNK
        # A copy (worked on in place below, never the caller's tensor), on the output's device: the float64
        # result of a large problem may be kept on the host.
        ex = ef[start:stop].to(device=of.device, dtype=torch.float64, copy=True)
        diff = of[start:stop].to(torch.float64, copy=True).sub_(ex).abs_()
        if not finite:
            keep = torch.isfinite(rf[start:stop]) & torch.isfinite(ex)
            diff, ex = diff[keep], ex[keep]
        if not diff.numel():
            continue
        sq_diff += float(torch.linalg.vector_norm(diff)) ** 2
        sq_exact += float(torch.linalg.vector_norm(ex)) ** 2
        max_abs = max(max_abs, float(diff.max()))
        absx = ex.abs_()
        max_exact = max(max_exact, float(absx.max()))
        # The reference's own error at each element, one ulp of the value added to the limit rather than multiplied
        # with it (a multiple of a half-precision ulp would accept whole percents): multiple x abs_err + eps |exact|.
        scale = absx.mul_(b.eps / multiple).add_(b.abs_err)
        if b.abs_err > 0:
            ratio = diff.div_(scale)
        else:  # exact zeros with a reference exact everywhere: any error there is infinitely many times it
            ratio = torch.where(scale > 0, diff / scale.clamp_min(1e-300), torch.where(diff > 0, math.inf, 0.0))
        worst = float(ratio.max())
        elem_ratio = max(elem_ratio, worst)
        if worst > multiple:
            bad += int(torch.count_nonzero(ratio > multiple))
    max_rel = max_abs / max_exact if max_exact > 0 else (math.inf if max_abs > 0 else 0.0)  # of the largest value
    norm_err = math.sqrt(sq_diff / sq_exact) if sq_exact > 0 else 0.0
    norm_ratio = norm_err / (b.norm_err + b.eps / multiple)  # the limit: multiple x norm_err + one ulp
    ratio = max(elem_ratio, norm_ratio)
    cmp = Comparison(True, "", max_abs, max_rel, norm_err, ratio)
    if bad:
        cmp.ok = False
        cmp.reason = (
            f"{where}{bad} of {r.numel()} elements beyond the error budget: error {elem_ratio:.3g}x the "
            f"reference's own rounding error, limit {multiple:g}x (max abs err {max_abs:.3g} against float64)"
        )
    elif norm_ratio > multiple:
        cmp.ok = False
        cmp.reason = (
            f"{where}error {norm_ratio:.3g}x the reference's own rounding error in norm (||out - exact|| / "
            f"||exact|| = {norm_err:.3g}), limit {multiple:g}x, though every element is within its bound"
        )
    return cmp


def _mismatch(o: Any, r: torch.Tensor, where: str) -> Comparison | None:
    """Type, shape, dtype and device of an output tensor against the reference's (None: they agree)."""
    if o is None:
        return Comparison(False, f"{where}forward returned None where the reference returns a {tuple(r.shape)} tensor")
    if not isinstance(o, torch.Tensor):
        return Comparison(False, f"{where}expected a tensor, got {type(o).__name__}")
    if o.shape != r.shape:
        return Comparison(False, f"{where}shape {tuple(o.shape)} != expected {tuple(r.shape)}")
    if o.dtype != r.dtype:
        return Comparison(False, f"{where}dtype {o.dtype} != expected {r.dtype}")
    if o.device.type != r.device.type:
        return Comparison(False, f"{where}device {o.device} != expected {r.device}")
    return None


def _compare_leaf(o: Any, r: Any, atol: float, rtol: float, where: str, norm: bool = True) -> Comparison:
    if not isinstance(r, torch.Tensor):
        if isinstance(r, (int, float)) and isinstance(o, (int, float)):
            err = abs(float(o) - float(r))
            ok = math.isclose(float(o), float(r), rel_tol=rtol, abs_tol=atol)
            return Comparison(ok, "" if ok else f"{where}{o!r} != {r!r}", err, err / max(abs(r), atol))
        ok = o == r
        return Comparison(bool(ok), "" if ok else f"{where}{o!r} != {r!r}")
    wrong = _mismatch(o, r, where)
    if wrong is not None:
        return wrong
    if r.numel() == 0:
        return Comparison(True)
    if not r.is_floating_point() and not r.is_complex():
        bad = int((o != r).sum())
        if bad:
            return Comparison(False, f"{where}{bad} of {r.numel()} elements differ", float("inf"), float("inf"))
        return Comparison(True)
    if r.is_complex():
        return _compare_masked(o, r, atol, rtol, where, norm)
    # The common case, everything finite: few full passes, float32 work for float32 and narrower dtypes
    # (differences of float32 values are exact to rounding, far below any tolerance). A norm is finite
    # exactly when every element is and nothing overflows; otherwise the masked float64 path decides.
    work = torch.float64 if r.dtype == torch.float64 else torch.float32
    o_, r_ = o.detach().to(work), r.detach().to(work)
    ref_norm, out_norm = _norm(r_), _norm(o_)
    if not (math.isfinite(ref_norm) and math.isfinite(out_norm)):
        return _compare_masked(o, r, atol, rtol, where, norm)
    diff = torch.sub(o_, r_).abs_()
    max_abs = float(diff.max())
    norm_err = _norm(diff) / ref_norm if ref_norm > 0 else 0.0  # an all-zero reference: elementwise decides
    r_abs = r_.abs()
    excess = torch.add(diff, r_abs, alpha=-rtol)  # |out - ref| - rtol |ref|, to compare with atol
    bad = int(torch.count_nonzero(excess > atol)) if float(excess.max()) > atol else 0
    del excess
    max_rel = float(diff.div_(r_abs.clamp_min_(max(atol, torch.finfo(work).tiny))).max())
    return _verdict(bad, r.numel(), max_abs, max_rel, norm_err, atol, rtol, where, norm)


def _norm(t: torch.Tensor) -> float:
    return float(torch.linalg.vector_norm(t))


def _norm_ratio(diff: torch.Tensor, ref: torch.Tensor) -> float:
    ref_norm = float(torch.linalg.vector_norm(ref, dtype=torch.float64))
    if ref_norm == 0.0:
        return 0.0  # an all-zero reference: the elementwise test alone decides
    return float(torch.linalg.vector_norm(diff, dtype=torch.float64)) / ref_norm


def _compare_masked(
    o: torch.Tensor, r: torch.Tensor, atol: float, rtol: float, where: str, norm: bool = True
) -> Comparison:
    """Outputs with NaN or Inf (or complex): placement must match, finite elements are compared."""
    o64, r64 = o.detach().double() if not o.is_complex() else o.detach(), r.detach().double()
    if r.is_complex():
        o64, r64 = o.detach().to(torch.complex128), r.detach().to(torch.complex128)
    wrong = _placement(o64, r64, where)
    if wrong is not None:
        return wrong
    finite = torch.isfinite(r64)
    diff = (o64 - r64).abs().masked_fill(~finite, 0.0)
    max_abs = float(diff.max())
    max_rel = float((diff / r64.abs().clamp_min(atol)).max())
    bound = atol + rtol * r64.abs().masked_fill(~finite, 0.0)
    bad = int((diff > bound).sum())
    norm_err = _norm_ratio(diff, r64.masked_fill(~finite, 0.0))
    return _verdict(bad, r.numel(), max_abs, max_rel, norm_err, atol, rtol, where, norm)


def _verdict(
    bad: int,
    n: int,
    max_abs: float,
    max_rel: float,
    norm_err: float,
    atol: float,
    rtol: float,
    where: str,
    norm: bool = True,
) -> Comparison:
    if bad:
        reason = (
            f"{where}{bad} of {n} elements outside atol={atol:g}, rtol={rtol:g} "
            f"(max abs err {max_abs:.3g}, max rel err {max_rel:.3g})"
        )
        return Comparison(False, reason, max_abs, max_rel, norm_err)
    limit = norm_bound(rtol)
    if norm and not norm_err <= limit:
        reason = (
            f"{where}normalised error ||out - ref|| / ||ref|| = {norm_err:.3g} exceeds {limit:g} although every "
            f"element is within atol={atol:g} (tiny-output check)"
        )
        return Comparison(False, reason, max_abs, max_rel, norm_err)
    return Comparison(True, "", max_abs, max_rel, norm_err)


def snapshot(inputs: list[Any]) -> list[Any]:
    """Copies of the tensor inputs, to verify afterwards that the candidate did not modify them."""
    return trees.clone(inputs)


def inputs_unchanged(inputs: list[Any], before: list[Any]) -> str:
    """'' when every tensor input still has its snapshot's shape and values, else which one changed (counted
    over the tensor leaves: input 2 is the third tensor, however nested)."""
    now, then = trees.tensors(inputs), trees.tensors(before)
    if len(now) != len(then):
        return "the inputs were modified by the candidate (tensors added or removed)"
    for i, (x, b) in enumerate(zip(now, then)):
        if x.shape != b.shape or x.dtype != b.dtype:
            return f"input {i} was modified by the candidate (shape or dtype changed)"
        if not torch.equal(x, b) and not (
            x.is_floating_point() and torch.equal(torch.nan_to_num(x), torch.nan_to_num(b))
        ):
            return f"input {i} was modified by the candidate"
    return ""
