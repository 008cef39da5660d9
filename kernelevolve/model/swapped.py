"""The swapped model the end-to-end proof measures: `kernelevolve.swap(model, DIR)` (docs/model.md, "Swap-in"),
and what it says it put in."""

from __future__ import annotations

from pathlib import Path

import torch

from kernelevolve.model.swap import SwapReport, swap


def swapped_model(model: torch.nn.Module, folder: Path) -> torch.nn.Module:
    """A swapped copy of the model (the original untouched, on ATen alone); SwapError says why it cannot be."""
    return swap(model, folder)


def report_of(swapped: torch.nn.Module) -> SwapReport:
    return swapped.kernelevolve_report
