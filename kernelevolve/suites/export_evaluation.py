"""A finished search's exported module, evaluated once per module, options and environment: re-running a `bench`
command (a deferred model's rounds, a suite's table rebuilt) would otherwise spend device time evaluating every
finished problem's unchanged export again. Kept in the run's folder; `bench --remeasure` evaluates again."""

from __future__ import annotations

import contextlib
import json
import os
import time
from pathlib import Path
from typing import Any

from kernelevolve.eval import environment
from kernelevolve.problem.problem import source_hash
from kernelevolve.result import EvalResult, Status

KEPT = "export_evaluation.json"
# Verdicts that are a property of the module (issue 19's rule for stored results); never a timeout or a crash.
REUSABLE = {Status.OK, Status.INCORRECT, Status.COMPILE_ERROR}


def reusable(folder: Path, source: str, options: dict[str, Any], env: dict[str, str]) -> tuple[EvalResult, str] | None:
    """(the kept evaluation, when it was made) where the module, the options and the environment are this call's."""
    try:
        kept = json.loads((folder / KEPT).read_text())
        result = EvalResult.model_validate(kept["result"])
        if kept["source_hash"] != source_hash(source) or kept["options"] != options:
            return None
    except (OSError, ValueError, KeyError, TypeError):
        return None
    if result.status not in REUSABLE or not environment.matches(result.versions, result.device, env):
        return None
    return result, str(kept.get("evaluated_at", ""))


def keep(folder: Path, source: str, options: dict[str, Any], result: EvalResult) -> str:
    """Written whole or not at all (a rename): a bench killed mid-write leaves the previous one, or none. Returns
    why nothing was kept ("" when it was): a full disk costs the next call a new evaluation, never this row."""
    record = {
        "source_hash": source_hash(source),
        "options": options,
        "evaluated_at": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "result": result.model_dump(mode="json"),
    }
    tmp = folder / f".{KEPT}.{os.getpid()}"
    try:
        folder.mkdir(parents=True, exist_ok=True)
        tmp.write_text(json.dumps(record, indent=1))
        tmp.replace(folder / KEPT)
    except OSError as e:
        with contextlib.suppress(OSError):
            tmp.unlink(missing_ok=True)
        why = e.strerror or e
        return f"the export's evaluation was not kept in {folder} ({why}): the next bench evaluates it again"
    return ""
