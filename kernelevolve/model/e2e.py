"""The end-to-end proof of a swapped model: its outputs (and gradients) checked against the original's by the
measured rule over fresh batches, its forward timed against eager and torch.compile, and the Amdahl table's
prediction set beside the measured gain, as DIR/e2e.json and DIR/e2e.html (docs/model.md, "The end-to-end proof").
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Any

import torch

from kernelevolve.kernels.enable import enabled
from kernelevolve.model import e2e_check
from kernelevolve.model.e2e_timing import Forward, Timed, batch_rows, time_all
from kernelevolve.model.entry import LoadedModel, device_of
from kernelevolve.model.swap import SwapReport, swap
from kernelevolve.model.table import Row, amdahl, counted, predicted

MANIFEST = "model.json"  # written by `kernelevolve model` (model/extract.py)
E2E_JSON = "e2e.json"
E2E_HTML = "e2e.html"


class ProofError(Exception):
    """The proof cannot start: a directory without model.json or kernels, a model that cannot be swapped."""


@dataclass
class ProofOptions:
    variants: list[str]
    batches: int = 3
    train: bool = False
    loss: e2e_check.Loss | None = None  # the gradients' loss; None: the sum of the outputs
    runs: int = 20  # timed forwards per variant


def read_manifest(folder: Path) -> dict[str, Any]:
    path = folder / MANIFEST
    try:
        manifest = json.loads(path.read_text())
    except FileNotFoundError:
        raise ProofError(
            f"{folder} holds no {MANIFEST}: run `kernelevolve model ENTRY --out {folder} --search` first"
        ) from None
    except (OSError, ValueError) as e:
        again = f"write it again with `kernelevolve model ENTRY --out {folder}`"
        raise ProofError(f"cannot read {path}: {e}; {again}") from None
    if not isinstance(manifest, dict) or not isinstance(manifest.get("rows"), list):
        raise ProofError(f"{path} is not a model table (no rows): write it again with `kernelevolve model`")
    return manifest


def manifest_rows(manifest: dict[str, Any]) -> list[Row]:
    """model.json's rows as the table's Rows (fields it does not know left out)."""
    known = {f.name for f in fields(Row)}
    return [Row(**{k: v for k, v in r.items() if k in known}) for r in manifest["rows"]]


def _in_model(row: Row, report: SwapReport) -> bool:
    """Whether the row's kernel is in the swapped model, as the swap reports it: an operator's kernel serving the
    swapped forward, a region's swapped in at one place or more."""
    if row.kind == "operator":
        served = {op.removesuffix(".default") for op in report.operators}
        return any(op.removesuffix(".default") in served for op in row.ops)
    return any(r.name == row.name and r.swapped for r in report.regions)


def amdahl_section(
    rows: list[Row], timed: list[Timed], report: SwapReport, eager_wall_ms: float | None
) -> dict[str, Any]:
    """Each swapped row (searched, its kernel won and is in the model) with its share, kernel speedup and
    predicted end-to-end speedup; together the table's prediction (table.predicted) and the measured gains."""
    won = [r for r in counted(rows) if r.measured and r.measured > 1.0]
    swapped = [r for r in won if _in_model(r, report)]
    listed = [
        {"name": r.name, "kind": r.kind, "share": r.share, "time_ms": r.time_ms, "kernel_speedup": r.measured,
         "predicted": amdahl(r.share, r.measured or 1.0), "in_model": _in_model(r, report)}
        for r in won
    ]  # fmt: skip
    prediction = predicted(swapped)
    saved_ms = sum(r.time_ms * (1.0 - 1.0 / (r.measured or 1.0)) for r in counted(swapped))
    off = {t.name: t for t in timed if not t.graphs and t.status == "ok"}
    eager, swapped_t = off.get("eager"), off.get("swapped")
    vs_eager = _ratio(eager, swapped_t)
    best_name = min((n for n in ("eager", "compile") if n in off), key=lambda n: off[n].median_ms, default=None)
    vs_best = _ratio(off.get(best_name) if best_name else None, swapped_t)
    return {
        "rows": listed,
        "predicted": prediction,
        "predicted_wall": _wall_prediction(eager_wall_ms, saved_ms),
        "measured_vs_eager": vs_eager,
        "best_baseline": best_name,
        "measured_vs_best": vs_best,
        "error": abs(prediction - vs_eager) / vs_eager if vs_eager else None,
    }


def _ratio(base: Timed | None, new: Timed | None) -> float | None:
    if base is None or new is None or not new.median_ms:
        return None
    return base.median_ms / new.median_ms


def _wall_prediction(eager_ms: float | None, saved_ms: float) -> float | None:
    """The rows' saved time against the forward's measured eager wall time instead of the operators' time."""
    if not eager_ms or saved_ms >= eager_ms:
        return None
    return eager_ms / (eager_ms - saved_ms)


def prove(loaded: LoadedModel, folder: Path, options: ProofOptions, say: Callable[[str], None]) -> dict[str, Any]:
    """Steps 1-3 of the proof on the loaded model; the e2e.json data. ProofError where it cannot start."""
    manifest = read_manifest(folder)
    rows = manifest_rows(manifest)
    notes = _manifest_notes(manifest, loaded)
    _original_on_aten("before the swap: disable them (kernelevolve.disable()) first")
    try:
        swapped = swap(loaded.model, folder).eval()
    except Exception as e:  # noqa: BLE001 - SwapError and the swap's own failures alike: one line
        raise ProofError(str(e)) from None
    _original_on_aten("by the swap: the swapped model must serve its kernels in its own forward alone")
    device = device_of(loaded.target)
    say(f"checking outputs over {options.batches} fresh batches (the measured rule) ...")
    checks = _checks(loaded, swapped, options, device)
    forward = Forward(loaded.model, swapped, loaded.args, loaded.kwargs, device)
    timed, graphs_off = time_all(forward, options.variants, options.runs, say)
    eager = next((t for t in timed if t.name == "eager" and not t.graphs and t.status == "ok"), None)
    report: SwapReport = swapped.kernelevolve_report
    section = amdahl_section(rows, timed, report, eager.median_ms if eager else None)
    if not section["rows"]:
        notes.append("no searched row's kernel won in model.json: nothing is predicted to change")
    return {
        "entry": loaded.entry,
        "target": loaded.target,
        "folder": str(folder),
        "date": time.strftime("%Y-%m-%d %H:%M"),
        "torch": torch.__version__,
        "swap": report.lines(),
        "batch": batch_rows(loaded.args, loaded.kwargs),
        "ok": all(c.ok for c in checks),
        "checks": [{**asdict(c), "ok": c.ok} for c in checks],
        "graphs": {"on": not graphs_off, "why_off": graphs_off},
        "variants": [{**asdict(t), "label": t.label, "vs_eager": _ratio(eager, t)} for t in timed],
        "amdahl": section,
        "shares_from": {
            "operators_ms": manifest.get("forward", {}).get("operators_ms"),
            "eager_ms": manifest.get("forward", {}).get("eager_ms"),
        },  # fmt: skip
        "notes": notes + [n for c in checks for n in c.notes],
    }


def _original_on_aten(when: str) -> None:
    """The original must run on ATen alone: kernels registered for every model (by the entry, or a swap that
    registers for good) would make the baseline the swapped model."""
    if enabled():
        raise ProofError(
            f"kernels are registered for every model ({', '.join(map(repr, enabled()))}), so the original would "
            f"run on them too; registered {when}"
        )


def _manifest_notes(manifest: dict[str, Any], loaded: LoadedModel) -> list[str]:
    notes = []
    if manifest.get("entry") not in (None, loaded.entry):
        notes.append(f"model.json was written for {manifest['entry']}, not {loaded.entry}: its shares may not apply")
    if manifest.get("target") not in (None, loaded.target):
        notes.append(f"model.json's shares were profiled on {manifest['target']}, this proof runs on {loaded.target}")
    if not any(r.get("status") for r in manifest["rows"]):
        notes.append("model.json has no searched rows (run with --search): no kernel speedups to predict from")
    return notes


def _checks(
    loaded: LoadedModel, swapped: torch.nn.Module, options: ProofOptions, device: torch.device
) -> list[e2e_check.Check]:
    batches = [
        e2e_check.fresh_batch(loaded.args, loaded.kwargs, e2e_check.FRESH_SEED + i, device)
        for i in range(options.batches)
    ]
    original, candidate = e2e_check.Called(loaded.model), e2e_check.Called(swapped)
    found = [e2e_check.compare(original, candidate, batches, "outputs", e2e_check.output_name)]
    if options.train:
        loss = options.loss or e2e_check.sum_of_outputs
        original, candidate = e2e_check.Gradients(loaded.model, loss), e2e_check.Gradients(swapped, loss)
        found.append(e2e_check.compare(original, candidate, batches[:1], "gradients", e2e_check.gradient_name))
    return found


def finite(value: Any) -> Any:
    """JSON without NaN or Infinity: None in their place."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: finite(v) for k, v in value.items()}
    if isinstance(value, list):
        return [finite(v) for v in value]
    return value


def write_json(folder: Path, data: dict[str, Any]) -> Path:
    path = folder / E2E_JSON
    path.write_text(json.dumps(finite(data), indent=1) + "\n")
    return path
