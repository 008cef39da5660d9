"""The swapped model's outputs (and, when asked, one training step's gradients) against the original's over fresh
batches, each output judged by the harness's measured rule: its error against a float64 run of the original within
BUDGET_MULTIPLE times the original's own rounding error (eval/worker/oracle.py, correctness.py). The rule is the
harness's, not a second one (docs/model.md, "The end-to-end proof").

A fresh batch is drawn like the example inputs (kernelevolve/aten/spec.py: the same shapes, dtypes and layouts,
floating values uniform within the example's range, integer tensors within theirs, small integer tensors such as
offsets kept exactly).
"""

from __future__ import annotations

import types
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import torch
from torch.utils._pytree import keystr, tree_flatten, tree_flatten_with_path, tree_map

from kernelevolve.aten.spec import build, describe
from kernelevolve.eval.worker.correctness import Comparison, Criterion
from kernelevolve.eval.worker.oracle import BUDGET_MULTIPLE, Float64Reference, Oracle, unit_roundoff
from kernelevolve.problem.problem import tolerance

FRESH_SEED = 1000  # batch i is drawn with seed FRESH_SEED + i: the same batches on every run
Loss = Callable[[Any], torch.Tensor]


class CheckError(Exception):
    """The check cannot run (inputs that cannot be drawn again, a loss that is not a scalar): one line."""


@dataclass
class LeafCheck:
    """One output (or one parameter's gradient) over every batch."""

    name: str  # 'output', "output[0]", "output['logits']", or the parameter's name
    ok: bool = True
    worst_ratio: float | None = None  # its error over the original's own rounding error, the worst batch's
    max_abs_err: float = 0.0
    failed: int = 0  # batches where it was beyond the rule
    reason: str = ""  # the first failing batch's, as the rule says it

    def add(self, batch: int, cmp: Comparison) -> None:
        if cmp.error_ratio is not None:
            self.worst_ratio = max(self.worst_ratio or 0.0, cmp.error_ratio)
        self.max_abs_err = max(self.max_abs_err, cmp.max_abs_err)
        if not cmp.ok:
            self.failed += 1
            if self.ok:
                self.reason = f"batch {batch}: {cmp.reason}"
            self.ok = False


@dataclass
class Check:
    """The verdict on outputs or gradients, leaf by leaf."""

    what: str  # "outputs" or "gradients"
    batches: int
    rule: str
    leaves: list[LeafCheck] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return all(leaf.ok for leaf in self.leaves)

    def failures(self) -> list[str]:
        """One line per leaf beyond the rule: which and by how much."""
        return [f"{self.what}: {leaf.name}: {leaf.reason}" for leaf in self.leaves if not leaf.ok]


class Called(torch.nn.Module):
    """The model on one batch given as positional values, the keyword arguments last (as the float64 oracle calls
    a reference: `model(*inputs)`)."""

    def __init__(self, model: torch.nn.Module) -> None:
        super().__init__()
        self.model = model

    def forward(self, *values: Any) -> Any:
        return self.model(*values[:-1], **values[-1])


class Gradients(torch.nn.Module):
    """One training step's gradients of the loss, by parameter name (the original's names)."""

    def __init__(self, model: torch.nn.Module, loss: Loss) -> None:
        super().__init__()
        self.model = model
        self.loss = loss

    def forward(self, *values: Any) -> dict[str, torch.Tensor]:
        named = [(n, p) for n, p in self.model.named_parameters() if p.requires_grad]
        with torch.enable_grad():
            loss = self.loss(self.model(*values[:-1], **values[-1]))
            if not (isinstance(loss, torch.Tensor) and loss.numel() == 1 and loss.requires_grad):
                raise CheckError("the loss must be a scalar tensor that depends on the model's parameters")
            grads = torch.autograd.grad(loss, [p for _, p in named], allow_unused=True)
        return {n: torch.zeros_like(p) if g is None else g for (n, p), g in zip(named, grads)}


def sum_of_outputs(out: Any) -> torch.Tensor:
    """The default loss: every floating output summed."""
    leaves = [x for x in tree_flatten(out)[0] if isinstance(x, torch.Tensor) and x.is_floating_point()]
    if not leaves:
        raise CheckError("the model has no floating output to sum into a loss: give one with --loss")
    return sum(x.float().sum() for x in leaves)  # type: ignore[return-value]


def fresh_batch(args: tuple, kwargs: dict, seed: int, device: torch.device) -> list[Any]:
    """The example inputs drawn again (new values, the same shapes, dtypes, layouts and ranges), as Called's
    positional values."""
    try:
        spec = describe([list(args), kwargs])
    except TypeError as e:
        raise CheckError(f"the example inputs cannot be drawn again ({e}): the check needs tensor inputs") from None
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        built_args, built_kwargs = build(spec)
    moved = tree_map(lambda v: v.to(device) if isinstance(v, torch.Tensor) else v, [*built_args, built_kwargs])
    return moved


def _floating_dtype(out: Any) -> torch.dtype:
    floating = [x for x in tree_flatten(out)[0] if isinstance(x, torch.Tensor) and x.is_floating_point()]
    return floating[0].dtype if floating else torch.float32


def _criterion(dtype: torch.dtype) -> Criterion:
    """The harness's default: the measured rule, the per-dtype tolerance where a batch has no float64 oracle."""
    atol, rtol = tolerance(types.SimpleNamespace(), str(dtype).removeprefix("torch."))
    return Criterion("measured", atol, rtol, BUDGET_MULTIPLE)


def compare(
    reference: torch.nn.Module,
    candidate: torch.nn.Module,
    batches: list[list[Any]],
    what: str,
    name: Callable[[tuple], str],
) -> Check:
    """Each batch through both modules (Called or Gradients), every leaf of the candidate's result judged against
    the reference's by the measured rule. `name(path)` says a leaf's name (the swapped model's kernels serve its
    own forward alone: the reference and its float64 run stay on ATen)."""
    first = _run(reference, batches[0])
    dtype = _floating_dtype(first)
    criterion = _criterion(dtype)
    check = Check(what, len(batches), criterion.describe())
    f64 = Float64Reference(reference, dtype, unit_roundoff(dtype, torch.backends.cuda.matmul.allow_tf32))
    leaves: dict[str, LeafCheck] = {}
    for i, values in enumerate(batches):
        ref = first if i == 0 else _run(reference, values)
        out = _run(candidate, values)
        oracle = f64.measure(values, ref, FRESH_SEED + i)
        if isinstance(oracle, str):
            check.notes.append(f"{what}, batch {i}: no float64 run ({oracle}); judged by {criterion.rtol:g} rtol")
            oracle = None
        ref_paths, ref_spec = tree_flatten_with_path(ref)
        out_leaves, out_spec = tree_flatten(out)
        if out_spec != ref_spec:
            leaf = leaves.setdefault("structure", LeafCheck("structure"))
            leaf.add(i, Comparison(False, f"the swapped model returns {out_spec}, the original {ref_spec}"))
            continue
        exact = tree_flatten(oracle.exact)[0] if oracle else None
        for k, ((path, r), o) in enumerate(zip(ref_paths, out_leaves)):
            key = name(path)
            one = Oracle(exact[k], [oracle.budgets[k]]) if oracle and exact is not None else None
            leaves.setdefault(key, LeafCheck(key)).add(i, criterion.check(o, r, one))
    check.leaves = list(leaves.values())
    return check


def _run(module: torch.nn.Module, values: list[Any]) -> Any:
    with torch.no_grad():
        return module(*values)


def output_name(path: tuple) -> str:
    return "output" + keystr(path)


def gradient_name(path: tuple) -> str:
    """A gradient's leaf is its parameter: the dict's key."""
    key = keystr(path)
    return key[2:-2] if key.startswith("['") and key.endswith("']") else key
