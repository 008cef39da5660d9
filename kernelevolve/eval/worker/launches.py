"""The kernel policy, dynamic half: forward must actually run a kernel compiled from the candidate.

Every target: sys.setprofile around one forward call records calls into the candidate's Triton kernels (the
launcher runs with a kernel defined in the candidate file as `self`) and into functions of the C++/CUDA
extensions it built (pybind functions of a module that was never imported: torch's cpp_extension loads
extensions without registering them in sys.modules, where torch's and Triton's own bindings are). cuda:
torch.profiler lists the device kernels one forward call ran; one of them must carry the name of a kernel the
candidate defines.
"""

from __future__ import annotations

import ast
import re
import sys
import time
from types import CodeType, FrameType
from typing import Any

import torch

from kernelevolve.platforms import for_device

_GLOBAL = re.compile(r"\b__global__\b")
# What may stand between __global__ and a kernel's name besides the return type: launch bounds and attributes
# (`__global__ void __launch_bounds__(256) k(` is as common as `__global__ __launch_bounds__(256) void k(`).
_QUALIFIERS = re.compile(r"__launch_bounds__\s*\([^)]*\)|__attribute__\s*\(\([^)]*\)\)")
_NAME_BEFORE_PAREN = re.compile(r"[^(;{}]*?(\w+)\s*\(")


def _global_names(text: str) -> list[str]:
    names = []
    for m in _GLOBAL.finditer(text):
        declaration = _QUALIFIERS.sub(" ", text[m.end() : m.end() + 500])
        found = _NAME_BEFORE_PAREN.match(declaration)
        if found:
            names.append(found.group(1))
    return names


def _triton_launch_codes() -> set[CodeType]:
    codes: set[CodeType] = set()
    try:
        from triton.runtime.jit import JITFunction

        codes.add(JITFunction.run.__code__)
    except (ImportError, AttributeError):
        pass
    try:
        from triton.runtime.interpreter import InterpretedFunction

        codes.add(InterpretedFunction.run.__code__)
    except (ImportError, AttributeError):
        pass
    return codes


def _is_extension_function(fn: Any) -> bool:
    owner = getattr(fn, "__self__", None)
    module = getattr(fn, "__module__", None)
    return type(owner).__name__.startswith("pybind11") and isinstance(module, str) and module not in sys.modules


class LaunchMonitor:
    """Context manager around one forward call; `seen` lists the candidate kernels it called."""

    def __init__(self, candidate_path: str):
        self.path = candidate_path
        self.seen: list[str] = []
        self._codes = _triton_launch_codes()
        self._previous: Any = None

    def __enter__(self) -> LaunchMonitor:
        self._previous = sys.getprofile()
        sys.setprofile(self._hook)
        return self

    def __exit__(self, *exc: object) -> None:
        sys.setprofile(self._previous)

    def _hook(self, frame: FrameType, event: str, arg: Any) -> None:
        if event == "c_call":
            if _is_extension_function(arg):
                self.seen.append(f"{arg.__module__}.{getattr(arg, '__name__', '?')}")
        elif event == "call" and frame.f_code in self._codes:
            fn = getattr(frame.f_locals.get("self"), "fn", None)
            code = getattr(fn, "__code__", None)
            if code is not None and code.co_filename == self.path:
                self.seen.append(fn.__name__)


def kernel_names(source: str) -> set[str]:
    """Names of the kernels a candidate defines: @triton.jit functions and CUDA __global__ functions."""
    names: set[str] = set()
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return names
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef) and any("jit" in ast.unparse(d) for d in node.decorator_list):
            names.add(node.name)
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and "__global__" in node.value:
            names.update(_global_names(node.value))
    return names


def device_events(call: Any, device: torch.device) -> list[tuple[str, float]] | None:
    """(name, device microseconds) of every device operation one call runs (the device's platform profiles it:
    cuda through torch.profiler), in order; None when profiling fails. The one profiler wrapper: the kernel check
    and eval.profiling both use it."""
    return for_device(device).device_events(call, device)


def device_kernels(call: Any, device: torch.device) -> list[str] | None:
    """Names of the device kernels one call runs (cuda, via torch.profiler); None when profiling fails."""
    events = device_events(call, device)
    return None if events is None else [name for name, _ in events]


def is_candidate_kernel(kernel: str, names: set[str]) -> bool:
    """Whether a profiled device kernel carries the name of a kernel the candidate defines."""
    return any(n in kernel for n in names)


def ran_candidate_kernel(kernels: list[str], names: set[str]) -> bool:
    return any(is_candidate_kernel(k, names) for k in kernels)


def warm_up(device: torch.device, profiler: bool) -> dict[str, float]:
    """A GPU process's fixed start costs: its CUDA context, Triton's driver and, where this process profiles, the
    profiler's first start (CUPTI), which the kernel-launch check after timing would otherwise pay. Paid when the
    job has arrived, never by a spare worker: a spare holds no device memory (docs/harness.md, "Memory"). Returns
    the seconds each part took (`context`, `triton`, `profiler`), which the judge records as stages."""
    platform = for_device(device)
    if not platform.separate_device():
        return {}
    parts, t0 = {}, time.perf_counter()
    platform.set_device(device)
    probe = torch.empty(1, device=device)
    probe.zero_()
    platform.synchronize(device)
    parts["context"], t0 = time.perf_counter() - t0, time.perf_counter()
    try:
        import triton

        triton.runtime.driver.active.get_current_device()
    except Exception:  # noqa: BLE001 - no Triton, or a Triton without a GPU driver: nothing to warm
        pass
    parts["triton"], t0 = time.perf_counter() - t0, time.perf_counter()
    if profiler:
        device_events(probe.zero_, device)
        parts["profiler"] = time.perf_counter() - t0
    return parts
