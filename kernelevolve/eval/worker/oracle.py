"""The float64 oracle: the reference computed again in float64, and the error budget measured from it.

A fixed atol/rtol cannot serve every operator: a long reduction's rounding error grows with its length, an
ill-conditioned one (softmax of large logits) amplifies any rounding, and an absolute atol does not scale with
the output. So the harness measures, per trial and output, how far the working-precision reference itself is
from the float64 result, and how far the float64 result moves when every input and parameter is perturbed by
one unit roundoff of the working precision (what any implementation in that precision cannot avoid; it covers
a reference that happens to be more accurate than its precision, such as one accumulating in float64). A
candidate is then judged by its own error against the float64 result, as a multiple of that scale
(correctness.compare_budget).
"""

from __future__ import annotations

import copy
import math
from dataclasses import dataclass
from typing import Any

import torch
from torch.utils._pytree import tree_flatten

from kernelevolve.eval.rules import BUDGET_MULTIPLE
from kernelevolve.eval.worker import trees
from kernelevolve.eval.worker.memory import host_available
from kernelevolve.platforms import for_device

__all__ = ["BUDGET_MULTIPLE", "Float64Reference", "LeafBudget", "Oracle", "errors", "unit_roundoff"]

TF32_UNIT_ROUNDOFF = 2.0**-11  # 10 stored mantissa bits
CHUNK = 1 << 24  # elements per pass of the error sums: bounds the float64 temporaries on large outputs


@dataclass(frozen=True)
class LeafBudget:
    """The reference's own rounding error on one floating output: the largest element error and the
    normalised error ||err|| / ||exact||, each the larger of the reference's and the perturbed run's."""

    abs_err: float
    norm_err: float
    eps: float  # machine epsilon of the working dtype: the one-ulp floor, relative to each value

    def merge(self, other: LeafBudget) -> LeafBudget:
        return LeafBudget(max(self.abs_err, other.abs_err), max(self.norm_err, other.norm_err), self.eps)


@dataclass
class Oracle:
    exact: Any  # the reference's output computed in float64, the same structure as the reference's
    budgets: list[LeafBudget | None]  # per flattened leaf; None where the leaf is compared exactly


def unit_roundoff(dtype: torch.dtype, allow_tf32: bool) -> float:
    """Half the machine epsilon; TF32's where it is allowed in a float32 problem."""
    if allow_tf32 and dtype == torch.float32:
        return TF32_UNIT_ROUNDOFF
    return torch.finfo(dtype).eps / 2


def _to64(x: Any) -> Any:
    if isinstance(x, torch.Tensor) and x.is_floating_point():
        return x.detach().to(torch.float64)
    return x


HOST_FACTOR = 6  # float64 copies of the inputs a host run may hold at once: inputs, result, temporaries, perturbed


PATTERN = 1 << 20  # perturbation factors drawn per trial, tiled over larger tensors


def _perturb_(t: torch.Tensor, factors: torch.Tensor, offset: int) -> None:
    """t *= factors (each 1 + u r, r uniform in [-1, 1]: every value moved by at most one unit roundoff), tiled
    from `offset`, so each tensor meets the factors in another order."""
    flat = t.view(-1)
    pattern = torch.roll(factors, offset % factors.numel())
    for start in range(0, flat.numel(), pattern.numel()):
        part = flat[start : start + pattern.numel()]
        part.mul_(pattern[: part.numel()])


def _factors(u: float, seed: int, device: torch.device) -> torch.Tensor:
    gen = torch.Generator(device=device).manual_seed(seed)
    return torch.rand(PATTERN, generator=gen, dtype=torch.float64, device=device).mul_(2 * u).add_(1 - u)


def _integral(t: torch.Tensor) -> bool:
    """Floating tensors holding whole numbers (ids, counts, lengths stored as floats) are not perturbed: a
    perturbed 3.0 truncates to 2, and the budget would then measure a different function. A sample decides
    first; only a tensor whole there is checked in full."""
    if t.numel() == 0:
        return False
    head = t.reshape(-1)[:4096]
    return bool(torch.equal(head, head.round())) and bool(torch.equal(t, t.round()))


class Float64Reference:
    """The case's reference model in float64, built once and run on every trial's inputs: exactly, then with
    inputs and parameters perturbed (the parameters restored after)."""

    def __init__(self, ref_model: torch.nn.Module, dtype: torch.dtype, u: float) -> None:
        self.dtype, self.u = dtype, u
        self.model: torch.nn.Module | None = None
        self.why = ""
        if dtype == torch.float64:
            self.why = "the problem is in float64 already"
        elif not isinstance(ref_model, torch.nn.Module):
            self.why = "the reference is not a torch.nn.Module"
        else:
            try:
                self.model = copy.deepcopy(ref_model).to(torch.float64)
            except Exception as e:  # noqa: BLE001
                self.why = f"the reference model cannot be copied to float64 ({type(e).__name__}: {e})"

    def measure(self, inputs: list[Any], ref: Any, seed: int) -> Oracle | str:
        """The oracle for one input set, or why there is none (the caller falls back to a fixed tolerance). Where
        the device has no room for the float64 run, it runs on the host (and stays there for later trials)."""
        if self.model is None:
            return self.why
        try:
            return self._measure(inputs, ref, seed)
        except torch.OutOfMemoryError:
            if next(self.model.parameters(), torch.empty(0)).is_cpu and all(x.is_cpu for x in trees.tensors(inputs)):
                return "the float64 run does not fit in memory"
        need = HOST_FACTOR * sum(x.numel() * 8 for x in trees.tensors(inputs))
        available = host_available()
        if available is not None and need > available:
            return (
                f"the float64 run does not fit on the device, and the host has {available / 1e9:.3g} GB available "
                f"of the {need / 1e9:.3g} GB it would need"
            )
        device = next((x.device for x in (*self.model.parameters(), *trees.tensors(inputs)) if not x.is_cpu), None)
        self.model = self.model.cpu()
        if device is not None:
            for_device(device).empty_cache()
        host = trees.map_tensors(torch.Tensor.cpu, inputs)
        try:
            return self._measure(host, ref, seed)
        except torch.OutOfMemoryError:
            return "the float64 run does not fit in memory, on the device or the host"

    def _measure(self, inputs: list[Any], ref: Any, seed: int) -> Oracle | str:
        assert self.model is not None
        state = [t.data for t in [*self.model.parameters(), *self.model.buffers()] if t.dtype == torch.float64]
        saved = [t.clone() for t in state]
        try:
            with torch.no_grad():
                inputs64 = trees.map_tensors(_to64, inputs)
                exact = self.model(*inputs64)
                why = _not_float64(exact, ref)
                if why:
                    return why
                moved = [x for x in trees.tensors(inputs64) if x.dtype == torch.float64] + state
                factors: dict[torch.device, torch.Tensor] = {}
                for k, t in enumerate(x for x in moved if not _integral(x)):
                    if t.device not in factors:
                        factors[t.device] = _factors(self.u, seed, t.device)
                    _perturb_(t, factors[t.device], 7919 * k)
                perturbed = self.model(*inputs64)
                del inputs64, moved
        except torch.OutOfMemoryError:
            raise
        except Exception as e:  # noqa: BLE001
            return f"the reference does not run in float64 ({type(e).__name__}: {str(e)[:200]})"
        finally:
            for t, original in zip(state, saved):
                t.copy_(original)
        leaves = zip(tree_flatten(ref)[0], tree_flatten(exact)[0], tree_flatten(perturbed)[0])
        budgets: list[LeafBudget | None] = []
        for r, e, p in leaves:
            if not (isinstance(r, torch.Tensor) and r.is_floating_point()):
                budgets.append(None)
                continue
            exact_norm = _norm64(e)
            a_ref, n_ref = errors(r, e, exact_norm)
            a_pert, n_pert = errors(p, e, exact_norm)
            eps = torch.finfo(r.dtype).eps
            budget = LeafBudget(_finite_or_zero(max(a_ref, a_pert)), _finite_or_zero(max(n_ref, n_pert)), eps)
            why = _beyond_rounding(budget, e)
            if why:
                return why
            budgets.append(budget)
        return Oracle(exact, budgets)


def _beyond_rounding(b: LeafBudget, exact: torch.Tensor) -> str:
    """Rounding moves a result by a few ulps, amplified by the operator's conditioning; a float64 run that differs
    from the reference by a sizeable part of its values measures something else (random ops, a result that jumps
    with its inputs), and a budget built on it would accept anything."""
    limit = max(1e-2, 4 * math.sqrt(b.eps))
    largest = 0.0
    if exact.numel():
        lo, hi = (float(v) for v in torch.aminmax(exact))
        largest = max(-lo, hi)
        if not math.isfinite(largest):  # rare: the masked copy only then
            finite = exact[torch.isfinite(exact)]
            largest = float(finite.abs().max()) if finite.numel() else 0.0
    if b.norm_err > limit or (largest > 0 and b.abs_err > limit * largest):
        return (
            f"the float64 run differs from the reference by more than rounding (normalised {b.norm_err:.2g}): "
            "the reference is not deterministic, or jumps with its inputs"
        )
    return ""


def _finite_or_zero(v: float) -> float:
    return v if math.isfinite(v) else 0.0


def _not_float64(exact: Any, ref: Any) -> str:
    ex, rf = tree_flatten(exact)[0], tree_flatten(ref)[0]
    if len(ex) != len(rf):
        return "the reference's output changes structure in float64"
    for e, r in zip(ex, rf):
        if isinstance(r, torch.Tensor) and r.is_floating_point():
            if not isinstance(e, torch.Tensor) or e.dtype != torch.float64 or e.shape != r.shape:
                got = e.dtype if isinstance(e, torch.Tensor) else type(e).__name__
                return f"the reference computes in its own precision (run in float64, an output is {got})"
    return ""


def _norm64(t: torch.Tensor) -> float:
    return float(torch.linalg.vector_norm(t.detach(), dtype=torch.float64)) if t.numel() else 0.0


def errors(approx: torch.Tensor, exact: torch.Tensor, exact_norm: float | None = None) -> tuple[float, float]:
    """(max |approx - exact|, ||approx - exact|| / ||exact||) over the elements finite in both, in chunks: where
    everything is finite (the norms say so) three passes per chunk, else the finite elements alone."""
    a, e = approx.detach().reshape(-1), exact.detach().reshape(-1)
    exact_norm = _norm64(e) if exact_norm is None else exact_norm
    max_abs, sq_diff, sq_exact = 0.0, 0.0, 0.0
    masked = not math.isfinite(exact_norm)
    for start in range(0, e.numel(), CHUNK):
        ea = e[start : start + CHUNK]
        diff = a[start : start + CHUNK].to(device=ea.device, dtype=torch.float64, copy=True).sub_(ea)
        d = float(torch.linalg.vector_norm(diff))
        if masked or not math.isfinite(d):
            finite = torch.isfinite(diff)
            diff, ea = diff[finite], ea[finite]
            d = float(torch.linalg.vector_norm(diff))
            sq_exact += float(torch.linalg.vector_norm(ea, dtype=torch.float64)) ** 2
        if diff.numel():
            lo, hi = torch.aminmax(diff)
            max_abs = max(max_abs, -float(lo), float(hi))
            sq_diff += d * d
    if not masked:
        sq_exact = exact_norm**2
    return max_abs, (math.sqrt(sq_diff / sq_exact) if sq_exact > 0 else 0.0)
