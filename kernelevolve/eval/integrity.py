"""Detect a candidate re-binding what the harness relies on: torch functions the reference calls, the
timer's clocks, the problem's constants. Fingerprints are taken before the candidate loads and checked
after it ran."""

from __future__ import annotations

import time
import types
from typing import Any

import torch
import torch.nn.functional

WATCHED: dict[str, Any] = {
    "torch": torch,
    "torch.nn.functional": torch.nn.functional,
    "torch.Tensor": torch.Tensor,
    "torch.nn.Module": torch.nn.Module,
    "torch.cuda": torch.cuda,
    "time": time,
}


def _members(obj: Any) -> dict[str, int]:
    names = vars(obj) if isinstance(obj, (types.ModuleType, type)) else {}
    return {k: id(v) for k, v in list(names.items())}


def fingerprint(extra: dict[str, Any] | None = None) -> dict[str, dict[str, int]]:
    watched = dict(WATCHED)
    watched.update(extra or {})
    return {name: _members(obj) for name, obj in watched.items()}


def changed(before: dict[str, dict[str, int]], extra: dict[str, Any] | None = None) -> list[str]:
    """Names that were re-bound or deleted since the fingerprint (new names are allowed)."""
    now = fingerprint(extra)
    out = []
    for space, members in before.items():
        current = now.get(space, {})
        out.extend(f"{space}.{k}" for k, v in members.items() if current.get(k) != v)
    return out
