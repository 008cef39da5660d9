"""Detect a candidate re-binding what the harness relies on: torch functions the reference calls, the timer's
clocks, the problem's constants, and the harness's own comparator, timer and checks. Fingerprints are taken
before the candidate loads and checked after it ran.

A function is fingerprinted by its identity and its code object (swapping `__code__` keeps the identity); a
class by its own namespace, where a new name counts too (it shadows an inherited method); a module or an
object by its namespace, where new names are allowed (lazy imports add them).
"""

from __future__ import annotations

import builtins
import json
import math
import statistics
import sys
import threading
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
    "torch._C._nn": torch._C._nn,
    "torch.linalg": torch.linalg,
    "torch.special": torch.special,
    "time": time,
    "builtins": builtins,
    "math": math,
    "statistics": statistics,
    "threading": threading,
    "json": json,
}
# Module-name prefixes: "kernelevolve.eval" covers this package (kernelevolve.eval.worker.*) and the parent-side
# modules a worker loads too (job, spawn).
HARNESS_PACKAGES = ("kernelevolve.eval", "kernelevolve.result", "kernelevolve.problem", "kernelevolve.platforms")

Print = dict[str, tuple[int, ...]]


def harness_modules() -> dict[str, Any]:
    """The harness's own modules as loaded now (comparator, timer, checks, input builder), and the classes
    they define (Timer, Comparison, ...)."""
    out: dict[str, Any] = {}
    for name, mod in list(sys.modules.items()):
        if mod is None or not name.startswith(HARNESS_PACKAGES):
            continue
        out[name] = mod
        for attr, value in list(vars(mod).items()):
            if isinstance(value, type) and value.__module__ == name:
                out[f"{name}.{attr}"] = value
    return out


def _mark(value: Any) -> tuple[int, ...]:
    if isinstance(value, types.FunctionType):
        return (id(value), id(value.__code__), id(value.__defaults__), id(value.__kwdefaults__))
    if isinstance(value, (staticmethod, classmethod)):
        return (id(value), *_mark(value.__func__))
    return (id(value),)


def _members(obj: Any) -> Print:
    try:
        names = vars(obj)
    except TypeError:
        return {}
    return {k: _mark(v) for k, v in list(names.items())}


HOOKS = "global hooks"  # the fingerprint's space for hook registries and mode stacks
_MODULE_HOOKS = (
    "_global_forward_pre_hooks",
    "_global_forward_hooks",
    "_global_forward_hooks_always_called",
    "_global_forward_hooks_with_kwargs",
    "_global_backward_pre_hooks",
    "_global_backward_hooks",
    "_global_module_registration_hooks",
    "_global_parameter_registration_hooks",
    "_global_buffer_registration_hooks",
)


def _hooks() -> Print:
    """What runs inside every module call or torch op without re-binding anything: torch's global module hooks
    (a forward pre-hook that slows only the reference Model), torch function and dispatch modes left entered, and
    the interpreter's profile and trace functions. Entries count, by identity."""
    registry = torch.nn.modules.module
    out: Print = {}
    for name in _MODULE_HOOKS:
        hooks = getattr(registry, name, None)
        if isinstance(hooks, dict):
            out[f"torch.nn.modules.module.{name}"] = (len(hooks), *map(id, hooks.values()))
    out["torch function modes"] = (torch._C._len_torch_function_stack(),)
    out["torch dispatch modes"] = (torch._C._len_torch_dispatch_stack(),)
    out["sys.setprofile"] = (id(sys.getprofile()),)
    out["sys.settrace"] = (id(sys.gettrace()),)
    out["threading.setprofile"] = (id(getattr(threading, "_profile_hook", None)),)
    out["threading.settrace"] = (id(getattr(threading, "_trace_hook", None)),)
    return out


def fingerprint(extra: dict[str, Any] | None = None) -> dict[str, Print]:
    watched = dict(WATCHED)
    watched.update(extra or {})
    return {**{name: _members(obj) for name, obj in watched.items()}, HOOKS: _hooks()}


def changed(before: dict[str, Print], extra: dict[str, Any] | None = None) -> list[str]:
    """Names re-bound or deleted since the fingerprint; in classes, added names too; hooks installed (named
    `global hooks.<registry>`)."""
    watched = dict(WATCHED)
    watched.update(extra or {})
    now = {**{name: _members(obj) for name, obj in watched.items()}, HOOKS: _hooks()}
    out = []
    for space, members in before.items():
        current = now.get(space, {})
        out.extend(f"{space}.{k}" for k, v in members.items() if current.get(k) != v)
        if isinstance(watched.get(space), type):
            out.extend(f"{space}.{k}" for k in current if k not in members)
    return out
