"""Inputs as `get_inputs` makes them: a list whose items may be tensors or lists, tuples and dicts of them. The
harness clones, copies, rotates and compares them leaf by leaf, so a nested input is handled as a flat one is
(a jagged operator's list of per-feature tensors, a dict of named inputs)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
from torch.utils._pytree import tree_flatten, tree_map


def tensors(tree: Any) -> list[torch.Tensor]:
    """The tensor leaves, in a fixed order."""
    return [x for x in tree_flatten(tree)[0] if isinstance(x, torch.Tensor)]


def map_tensors(fn: Callable[[torch.Tensor], Any], tree: Any) -> Any:
    """The same structure with each tensor leaf replaced by fn(leaf); other leaves kept."""
    return tree_map(lambda x: fn(x) if isinstance(x, torch.Tensor) else x, tree)


def clone(tree: Any) -> Any:
    return map_tensors(torch.Tensor.clone, tree)


def copy_(dst: Any, src: Any) -> None:
    """dst's tensors take src's contents (the same structure: sets of one case)."""
    for d, s in zip(tensors(dst), tensors(src)):
        d.copy_(s)


def same_layout(trees: list[Any]) -> bool:
    """Whether every tree has one structure, with tensors of one shape and dtype at every position."""
    flat = [tree_flatten(t) for t in trees]
    if any(spec != flat[0][1] for _, spec in flat):
        return False
    for column in zip(*(leaves for leaves, _ in flat)):
        if isinstance(column[0], torch.Tensor):
            shape, dtype = column[0].shape, column[0].dtype
            if not all(isinstance(x, torch.Tensor) and x.shape == shape and x.dtype == dtype for x in column):
                return False
    return True
