"""The swapped model the end-to-end proof measures: `kernelevolve.swap(model, DIR)` where it exists, else the
original run under `kernelevolve.enable(DIR / "kernels")`, today's operator swap-in (docs/model.md, "The end-to-end
proof").

The fallback is a module that shares the original's submodules, parameters and buffers under their original names
(so a gradient compares with the original's by name) and registers the kernel directory only while its forward
runs, or for a whole block under `held()`: the original model, called outside it, runs on ATen alone.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager, nullcontext
from pathlib import Path
from typing import Any

import torch

from kernelevolve.kernels.enable import EnableError, enable

KERNELS = "kernels"  # under DIR: the operators' kernel directory `kernelevolve model --search` writes


class SwapError(Exception):
    """The swapped model cannot be built from the directory: one line saying why."""


class EnabledModel(torch.nn.Module):
    """The original model whose forward runs with a kernel directory's operators registered (enable())."""

    def __init__(self, model: torch.nn.Module, kernels: Path) -> None:
        super().__init__()
        object.__setattr__(self, "original", model)  # not a submodule: the names stay the original's
        for name, child in model.named_children():
            self.add_module(name, child)
        for name, param in model.named_parameters(recurse=False):
            self.register_parameter(name, param)
        for name, buffer in model.named_buffers(recurse=False):
            self.register_buffer(name, buffer, persistent=name not in model._non_persistent_buffers_set)
        self.kernels = kernels
        self._handle: Any = None
        self.training = model.training

    def train(self, mode: bool = True) -> EnabledModel:
        self.original.train(mode)
        return super().train(mode)

    @contextmanager
    def held(self) -> Iterator[None]:
        """The kernels registered for the whole block (a timing loop), not once per forward."""
        if self._handle is not None:
            yield
            return
        with enable(self.kernels) as handle:
            self._handle = handle
            try:
                yield
            finally:
                self._handle = None

    def forward(self, *args: Any, **kwargs: Any) -> Any:
        if self._handle is not None:
            return self.original(*args, **kwargs)
        with self.held():
            return self.original(*args, **kwargs)


def swapped_model(model: torch.nn.Module, folder: Path) -> torch.nn.Module:
    """The model with the directory's kernels in: `kernelevolve.swap` where it is importable, else EnabledModel
    over DIR/kernels (checked now: a bad directory is a SwapError, not a failure mid-measurement)."""
    try:
        from kernelevolve import swap
    except ImportError:  # not built yet (docs/model.md "Not done yet")
        swap = None
    if callable(swap):
        try:
            return swap(model, folder)
        except Exception as e:  # noqa: BLE001 - the swap's own failure, said in one line
            raise SwapError(f"{folder}: kernelevolve.swap failed: {type(e).__name__}: {e}") from e
    kernels = folder / KERNELS
    if not kernels.is_dir():
        raise SwapError(
            f"{folder} has no {KERNELS}/ kernel directory: run `kernelevolve model ENTRY --out {folder} --search` "
            "first (it writes the kernels that won)"
        )
    try:
        enable(kernels).disable()  # every file read and every kernel loaded once, nothing left registered
    except EnableError as e:
        raise SwapError(str(e)) from None
    return EnabledModel(model, kernels)


def swap_name(swapped: torch.nn.Module) -> str:
    """How the swapped model was built, for the report."""
    if isinstance(swapped, EnabledModel):
        return "enable() fallback: operators from DIR/kernels, regions not swapped (no kernelevolve.swap)"
    return "kernelevolve.swap"


def held(swapped: torch.nn.Module) -> Any:
    """A block with the swapped model's kernels registered throughout, where it offers one (`held()`)."""
    hold = getattr(swapped, "held", None)
    return hold() if callable(hold) else nullcontext()
