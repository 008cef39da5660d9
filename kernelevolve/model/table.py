"""The Amdahl table: a model's candidates (single operators at one signature, fused regions), each with its share
of the forward's operator time and what an ideal kernel for it could save end to end, ranked by that value; after
a search, each row's measured speedup and the end-to-end gain they predict together (docs/model.md, "The table").
"""

from __future__ import annotations

import hashlib
import json
import math
from dataclasses import asdict, dataclass, field
from typing import Any

from kernelevolve.aten.select import excluded
from kernelevolve.aten.spec import tensors_in
from kernelevolve.model.profile import OpGroup, Profile

DTYPE_SHORT = {"float32": "f32", "float16": "f16", "bfloat16": "bf16", "float64": "f64", "int64": "i64"}


@dataclass
class Row:
    """One candidate: an operator at one signature, or a fused region (all its occurrences)."""

    name: str  # the problem's folder name under --out, and what --pick takes
    kind: str  # "operator", or the region's kind
    ops: list[str]  # the ATen operators it covers
    signature: str  # shapes, dtypes and other arguments, for people
    calls: int
    time_ms: float  # all its calls over one forward
    share: float  # of the forward's operator time
    extractable: bool = True
    reason: str = ""  # why it is no problem, where it is not
    problem: str = ""  # the problem file it became, once written
    measured: float | None = None  # after a search: its export's speedup over eager (None: no correct kernel)
    status: str = ""  # after a search: the search's row status
    run: str = ""  # after a search that found a correct kernel: its run (the swap-in's region files read it)
    call: dict[str, Any] | None = field(default=None, repr=False)  # an operator row's call spec (the problem's)
    source: str = field(default="", repr=False)  # a region's problem file


def amdahl(share: float, speedup: float) -> float:
    """The end-to-end speedup when a part holding `share` of the time runs `speedup` times faster (inf: free)."""
    rest = 1.0 - share + (0.0 if math.isinf(speedup) else share / speedup)
    return math.inf if rest <= 0 else 1.0 / rest


def _arg_text(spec: Any) -> str:
    if isinstance(spec, dict) and "t" in spec and "dtype" in spec:
        shape = "x".join(str(n) for n in spec["t"])
        layout = "" if "stride" not in spec else f" stride {spec['stride']}"
        return f"{DTYPE_SHORT.get(spec['dtype'], spec['dtype'])}[{shape}]{layout}"
    if isinstance(spec, list):
        return "[" + ", ".join(_arg_text(s) for s in spec) + "]"
    if isinstance(spec, dict) and len(spec) == 1:
        return str(next(iter(spec.values())))  # a dtype, device, layout or float marker
    return repr(spec)


def signature_text(call: dict[str, Any]) -> str:
    """'f32[8x32], f32[32x64], beta=0.5': a call spec for people."""
    parts = [_arg_text(a) for a in call["args"]]
    parts += [f"{k}={_arg_text(v)}" for k, v in call.get("kwargs", {}).items()]
    return ", ".join(parts)


def operator_name(group: OpGroup) -> str:
    """'addmm.default-3f2a1c': the operator and a digest of its signature (stable across runs of the profile)."""
    digest = hashlib.sha1(f"{group.operator} {group.signature}".encode()).hexdigest()[:6]
    return f"{group.operator.split('::', 1)[-1]}-{digest}"


def operator_rows(profile: Profile) -> list[Row]:
    rows = []
    for g in profile.groups:
        why = excluded(g.operator) or ("" if tensors_in(g.call) else "no tensor argument")
        share = g.time_ms / profile.operators_ms if profile.operators_ms else 0.0
        row = Row(operator_name(g), "operator", [g.operator], signature_text(g.call), g.calls, g.time_ms, share)
        row.extractable, row.reason, row.call = not why, why or "", g.call
        rows.append(row)
    return rows


def region_rows(regions: list[Any], operators_ms: float) -> list[Row]:
    """Regions (kernelevolve/model/regions.py) as rows; regions with one signature are one row (their counts
    summed)."""
    by_signature: dict[str, Row] = {}
    for r in regions:
        time_ms = r.count * r.time_ms
        row = by_signature.get(r.signature)
        if row is None:
            row = Row(r.name, r.kind, list(r.ops), r.signature, r.count, time_ms, 0.0, source=r.source)
            by_signature[r.signature] = row
        else:
            row.calls += r.count
            row.time_ms += time_ms
    for row in by_signature.values():
        row.share = row.time_ms / operators_ms if operators_ms else 0.0
    return list(by_signature.values())


def ranked(rows: list[Row]) -> list[Row]:
    """Most valuable first: the largest share of the forward (what an ideal kernel saves); ties by name."""
    return sorted(rows, key=lambda r: (-r.time_ms, r.name))


def counted(rows: list[Row]) -> list[Row]:
    """The rows a combined prediction counts: a region that won covers its operators, so an operator row whose
    operator such a region covers is left out (its time would be counted twice)."""
    covered = {op for r in rows if r.kind != "operator" and (r.measured or 0) > 1.0 for op in r.ops}
    return [r for r in rows if r.kind != "operator" or not set(r.ops) & covered]


def predicted(rows: list[Row]) -> float:
    """The end-to-end speedup the rows' measured speedups predict together (Amdahl), each kernel used only where
    it wins (a row without a faster kernel keeps ATen's time)."""
    saved = sum(r.share * (1.0 - 1.0 / r.measured) for r in counted(rows) if r.measured and r.measured > 1.0)
    return amdahl(1.0, math.inf) if saved >= 1.0 else 1.0 / (1.0 - saved)


def as_json(profile: Profile, rows: list[Row], entry: str, assume: float | None) -> dict[str, Any]:
    """The table as model.json and `--json` give it."""
    return {
        "entry": entry,
        "target": profile.target,
        "forward": {
            "operators_ms": profile.operators_ms,
            "eager_ms": profile.eager_ms,
            "compiled_ms": profile.compiled_ms,
            "attribution": profile.attribution,
            "notes": profile.notes,
        },
        "assume_speedup": assume,
        "rows": [
            {
                **{k: v for k, v in asdict(r).items() if k not in ("call", "source")},
                "ideal_speedup": _finite(amdahl(r.share, math.inf)),
                "assumed_speedup": amdahl(r.share, assume) if assume else None,
            }
            for r in rows
        ],
        "predicted_speedup": predicted(rows) if any(r.status for r in rows) else None,
    }


def _finite(x: float) -> float | None:
    return None if math.isinf(x) else x


def dumps(data: dict[str, Any]) -> str:
    return json.dumps(data, indent=1) + "\n"
