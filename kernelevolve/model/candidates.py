"""Every candidate of a profiled model, ranked: its operators at each signature and, where the region finder is
installed (kernelevolve/model/regions.py), its fused regions (docs/model.md, "Regions")."""

from __future__ import annotations

import importlib
from typing import Any

from kernelevolve.model.entry import LoadedModel
from kernelevolve.model.profile import Profile
from kernelevolve.model.table import Row, operator_rows, ranked, region_rows

REGIONS_MODULE = "kernelevolve.model.regions"


def _finder() -> Any:
    """find_regions(model, args, kwargs, target), or None where this installation has no region finder."""
    try:
        module = importlib.import_module(REGIONS_MODULE)
    except ModuleNotFoundError as e:
        if e.name == REGIONS_MODULE:
            return None
        raise
    return getattr(module, "find_regions", None)


def region_candidates(loaded: LoadedModel, operators_ms: float) -> tuple[list[Row], str]:
    """The model's fused regions as rows, and a line saying what was found or why none was."""
    find = _finder()
    if find is None:
        return [], "fused regions: no region finder in this installation (kernelevolve/model/regions.py)"
    try:
        regions = find(loaded.model, loaded.args, loaded.kwargs, loaded.target)
    except Exception as e:  # noqa: BLE001 - regions are extra: the operators go on without them
        return [], f"fused regions skipped: the region finder failed ({type(e).__name__}: {e})"
    rows = region_rows(regions, operators_ms)
    return rows, f"fused regions: {len(regions)} found, {len(rows)} distinct"


def all_candidates(loaded: LoadedModel, profile: Profile) -> tuple[list[Row], list[str]]:
    """Operator and region rows, most valuable first, with the lines to say."""
    regions, line = region_candidates(loaded, profile.operators_ms)
    return ranked(operator_rows(profile) + regions), [line]
