"""`kernelevolve.swap(model, DIR)`: the model rebuilt with the kernels a `kernelevolve model ... --search` saved in
DIR, without any search (docs/model.md, "Swap-in").

The swapped model is a copy of the model whose class is a subclass of the model's own (same submodules,
parameters and attributes, so its state_dict has the original names). Its forward runs, inside the operator
kernels' scope (kernels/enable.py, scoped), either the model's graph as `torch.export` gave it at the example
inputs with each region that won replaced by its kernel (rewrite.py), when the call's inputs and weights are
exactly those the graph was made for and the model is in eval mode; or else the model's own forward.
"""

from __future__ import annotations

import contextlib
import copy
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch
from torch.utils._pytree import tree_map

from kernelevolve.kernels.enable import Enabled, EnableError, enable, read_entries
from kernelevolve.model.region_file import INPUTS, KERNELS, REGIONS, STATE_DICT, RegionEntry, RegionFileError, read
from kernelevolve.model.swap_graph import GraphRun, RegionOutcome, rewrite


class SwapError(Exception):
    """The directory cannot be swapped in (missing, foreign, corrupt, or saved from another model); nothing was
    applied. The message says what and how to fix it."""


@dataclass
class SwapReport:
    """What `swap` applied: each region swapped or fallen back (with the reason), and the operators served."""

    folder: Path
    regions: list[RegionOutcome] = field(default_factory=list)
    operators: list[str] = field(default_factory=list)
    operators_reason: str = ""  # why the kernels folder serves nothing, where it could not be enabled

    def lines(self) -> list[str]:
        out = []
        for r in self.regions:
            where = f"swapped in at {r.places} place(s): {r.reason}" if r.swapped else f"original nodes: {r.reason}"
            out.append(f"region {r.name}: {where}")
        if self.operators:
            out.append(f"operators served inside the swapped forward: {', '.join(self.operators)}")
        if self.operators_reason:
            out.append(f"operators: ATen serves them all: {self.operators_reason}")
        return out


@dataclass
class Directory:
    folder: Path
    regions: list[RegionEntry]
    kernels: Path | None
    state: dict[str, torch.Tensor]
    args: tuple
    kwargs: dict[str, Any]


def read_directory(folder: Path) -> Directory:
    """Everything the directory holds, read and checked (no kernel run); SwapError otherwise."""
    if not folder.is_dir():
        raise SwapError(f"{folder}: no such directory (write one with `kernelevolve model ENTRY --search --out DIR`)")
    state_path, inputs_path = folder / STATE_DICT, folder / INPUTS
    if not state_path.is_file() or not inputs_path.is_file():
        raise SwapError(
            f"{folder}: not a swap directory (no {STATE_DICT} and {INPUTS}; `kernelevolve model ENTRY --search "
            "--out DIR` writes them): give the --out of such a search"
        )
    try:
        state = torch.load(state_path, weights_only=True)
        inputs = torch.load(inputs_path, weights_only=True)
    except Exception as e:  # noqa: BLE001 - whatever torch.load says, the file is unreadable
        raise SwapError(f"{folder}: corrupt {STATE_DICT} or {INPUTS} ({type(e).__name__}): search again") from None
    shaped = isinstance(inputs, (tuple, list)) and len(inputs) == 2 and isinstance(inputs[1], dict)
    if not isinstance(state, dict) or not all(isinstance(v, torch.Tensor) for v in state.values()) or not shaped:
        raise SwapError(f"{folder}: corrupt {STATE_DICT} or {INPUTS} (not a state_dict, not (args, kwargs))")
    return Directory(folder, _regions(folder / REGIONS), _kernels(folder / KERNELS), state, tuple(inputs[0]), inputs[1])


def _regions(folder: Path) -> list[RegionEntry]:
    if not folder.exists():
        return []
    entries = []
    for path in sorted(folder.iterdir()):
        if path.name.startswith(".") or path.name == "__pycache__":
            continue
        if not path.is_file() or path.suffix != ".py":
            raise SwapError(f"{path}: not a region file (a regions folder holds only written .py files): move it out")
        try:
            entries.append(read(path))
        except RegionFileError as e:
            raise SwapError(str(e)) from None
    return entries


def _kernels(folder: Path) -> Path | None:
    if not folder.exists():
        return None
    try:
        read_entries(folder)
    except EnableError as e:
        raise SwapError(str(e)) from None
    return folder


def check_model(model: torch.nn.Module, state: dict[str, torch.Tensor], folder: Path) -> None:
    """The model must be the one the directory was saved from: the same state_dict names, shapes and dtypes."""
    if not isinstance(model, torch.nn.Module):
        raise SwapError(f"swap takes the original nn.Module, not a {type(model).__name__}")
    own = model.state_dict()
    missing, extra = sorted(set(state) - set(own)), sorted(set(own) - set(state))
    differ = [k for k in state if k in own and (own[k].shape != state[k].shape or own[k].dtype != state[k].dtype)]
    if missing or extra or differ:
        what = "; ".join(
            f"{label} {', '.join(names[:3])}{' ...' if len(names) > 3 else ''}"
            for label, names in (("it lacks", missing), ("it has more:", extra), ("other shape or dtype:", differ))
            if names
        )
        raise SwapError(f"{folder} was saved from another model than this one ({what}): swap the model searched")


class Swap:
    """A swapped model's own state: the report, the rewritten graph (or None) and the operators' scoped handle."""

    def __init__(self, report: SwapReport, graph: GraphRun | None, operators: Enabled | None) -> None:
        self.report, self.graph, self.operators = report, graph, operators

    def forward(self, model: torch.nn.Module, original: Any, args: tuple, kwargs: dict[str, Any]) -> Any:
        serving = self.operators is not None and not torch.compiler.is_compiling()
        with self.operators.serving() if serving else contextlib.nullcontext():
            flat = self.graph.flat_inputs(model, args, kwargs) if self.graph is not None else None
            return original(*args, **kwargs) if flat is None else self.graph.run(flat)


_classes: dict[type, type] = {}


def swapped_class(cls: type) -> type:
    """`Swapped<Name>`, a subclass of the model's class whose forward goes through its Swap."""
    if cls not in _classes:

        def forward(self: Any, *args: Any, **kwargs: Any) -> Any:
            return self._kernelevolve_swap.forward(self, super(subclass, self).forward, args, kwargs)

        subclass = type(f"Swapped{cls.__name__}", (cls,), {"forward": forward, "__module__": cls.__module__})
        _classes[cls] = subclass
    return _classes[cls]


def swap(model: torch.nn.Module, folder: str | Path, *, load_weights: bool = False) -> torch.nn.Module:
    """The model with DIR's kernels swapped in (a copy; the model itself is left as it is). load_weights: load
    the state_dict DIR holds (the weights it was searched with) instead of keeping the model's own. SwapError for
    a directory that cannot be swapped in, nothing applied; a kernel that fails falls back, as
    `swapped.kernelevolve_report` says."""
    folder = Path(folder)
    found = read_directory(folder)
    check_model(model, found.state, folder)
    swapped = copy.deepcopy(model)
    if load_weights:
        swapped.load_state_dict(found.state)
    device = next((p.device for p in swapped.parameters()), torch.device("cpu"))
    args, kwargs = tree_map(lambda v: v.to(device) if isinstance(v, torch.Tensor) else v, (found.args, found.kwargs))
    report = SwapReport(folder)
    graph, report.regions = rewrite(swapped, found.regions, args, kwargs) if found.regions else (None, [])
    operators = None
    if found.kernels is not None:
        try:
            operators = enable(found.kernels, scoped=True)
            report.operators = operators.operators
        except EnableError as e:
            report.operators_reason = str(e)
    swapped.__class__ = swapped_class(type(model))
    swapped._kernelevolve_swap = Swap(report, graph, operators)
    swapped.kernelevolve_report = report
    return swapped
