"""Every candidate of a profiled model, ranked: its operators at each signature and its fused regions
(kernelevolve/model/regions.py; docs/model.md, "Regions")."""

from __future__ import annotations

from kernelevolve.model import regions
from kernelevolve.model.entry import LoadedModel
from kernelevolve.model.profile import Profile
from kernelevolve.model.table import Row, operator_rows, ranked, region_rows

SKIPPED_SHOWN = 5  # regions skipped, named in the line (the rest counted)


def region_candidates(loaded: LoadedModel, operators_ms: float) -> tuple[list[Row], str]:
    """The model's fused regions as rows, and a line saying what was found, what was skipped and why, or why
    none was found."""
    try:
        found = regions.find_regions(loaded.model, loaded.args, loaded.kwargs, loaded.target)
    except Exception as e:  # noqa: BLE001 - regions are extra: the operators go on without them
        return [], f"fused regions skipped: the region finder failed ({type(e).__name__}: {e})"
    rows = region_rows(found, operators_ms)
    line = f"fused regions: {len(found)} found, {len(rows)} distinct"
    skipped = regions.last_skipped()
    if skipped:
        named = "; ".join(f"{name} ({why})" for name, why in skipped[:SKIPPED_SHOWN])
        more = f" and {len(skipped) - SKIPPED_SHOWN} more" if len(skipped) > SKIPPED_SHOWN else ""
        line += f"; {len(skipped)} skipped: {named}{more}"
    return rows, line


def all_candidates(loaded: LoadedModel, profile: Profile) -> tuple[list[Row], list[str]]:
    """Operator and region rows, most valuable first, with the lines to say."""
    regions, line = region_candidates(loaded, profile.operators_ms)
    return ranked(operator_rows(profile) + regions), [line]
