"""The model behind `kernelevolve model ENTRY`: MODULE:FUNCTION as `kernelevolve trace` takes it, or a bundled
recipe (`recipe:NAME`, kernelevolve/aten/recipes.py), on the target's device (docs/model.md, "The entry")."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch
from torch.utils._pytree import tree_map

from kernelevolve.aten.trace import TraceError, load_entry

RECIPE_PREFIX = "recipe:"
RECIPES_MODULE = "kernelevolve.aten.recipes"


class ModelError(Exception):
    """The model cannot be profiled or extracted as asked: one line saying what is wrong and how to fix it."""


@dataclass
class LoadedModel:
    """The entry as given, the MODULE:FUNCTION it resolved to, and the model with its inputs on the target."""

    entry: str
    resolved: str
    model: torch.nn.Module
    args: tuple[Any, ...]
    kwargs: dict[str, Any]
    target: str


def resolve_entry(entry: str) -> str:
    """'recipe:gpt2' -> 'kernelevolve.aten.recipes:gpt2' (a recipe the module has); anything else as given."""
    if not entry.startswith(RECIPE_PREFIX):
        return entry
    from kernelevolve.aten.recipes import RECIPES

    name = entry.removeprefix(RECIPE_PREFIX)
    if name not in RECIPES:
        raise ModelError(f"{entry}: no such recipe; the recipes are {', '.join(RECIPES)}")
    return f"{RECIPES_MODULE}:{name}"


def device_of(target: str) -> torch.device:
    """The device a target runs on; ModelError where it is absent."""
    if target == "cpu":
        return torch.device("cpu")
    if target in ("cuda", "rocm"):
        if not torch.cuda.is_available():
            raise ModelError(f"--target {target}: no GPU is visible to torch here; use --target cpu")
        return torch.device("cuda")
    raise ModelError(f"--target {target}: expected cpu or cuda")


def load(entry: str, target: str) -> LoadedModel:
    """The entry's model in eval mode and its example inputs, moved to the target's device."""
    resolved = resolve_entry(entry)
    try:
        model, args, kwargs = load_entry(resolved)
    except TraceError as e:
        raise ModelError(str(e)) from None
    device = device_of(target)
    try:
        model = model.to(device).eval()
        args, kwargs = tree_map(lambda v: v.to(device) if isinstance(v, torch.Tensor) else v, (args, kwargs))
    except Exception as e:  # noqa: BLE001 - the model's own failure
        raise ModelError(f"{entry}: cannot move the model or its inputs to {device}: {type(e).__name__}: {e}") from e
    return LoadedModel(entry, resolved, model, tuple(args), dict(kwargs), target)
