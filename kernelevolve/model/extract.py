"""Candidates into problem files under --out: a single operator through the ATen suite's generator (its real call
as SHAPE_CASES, OpInfo's samples of the operator as CHECK_CASES where it has them, like the suite), a region as the
file its finder wrote; and DIR/model.json, the table and which problem each row became (docs/model.md,
"Extraction"). A file already there is never overwritten: the user may have edited it."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from kernelevolve.aten.generate import MARKER, Use, problem_source, runs_cleanly, timed_calls
from kernelevolve.model.table import Row
from kernelevolve.problem.problem import ProblemError, load_problem

MODEL_MARKER = (
    "# Extracted by `kernelevolve model` (docs/model.md): yours to edit before `--search`; a later run never "
    "overwrites it."
)
MANIFEST = "model.json"


def digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def opinfo_samples(operators: list[str]) -> tuple[dict[str, dict[str, Any]], str]:
    """OpInfo's samples of each operator (kernelevolve/aten/opinfo.py), and a line saying what was used."""
    if not operators:
        return {}, ""
    try:
        from kernelevolve.aten.opinfo import samples_for

        samples = samples_for(operators)
    except ImportError as e:
        return {}, f"no OpInfo samples ({e}): the problems are checked on their traced call alone"
    missing = [op for op in operators if op not in samples]
    line = f"OpInfo samples for {len(operators) - len(missing)} of {len(operators)} operators"
    return samples, line + (f" (none reach {', '.join(missing)}: checked on the traced call alone)" if missing else "")


def operator_source(row: Row, entry: str, samples: dict[str, dict[str, Any]]) -> tuple[str | None, str]:
    """The problem file of an operator row, or None and why its call cannot be a problem."""
    op = row.ops[0]
    use = Use(models={entry}, share=row.share, calls={json.dumps(row.call): row.calls})
    if not timed_calls(op, use):
        return None, "its call, rebuilt from its spec, raises or writes its inputs"
    sample = samples.get(op, {"opinfos": [], "calls": []})
    checked = [c for c in sample["calls"] if runs_cleanly(op, c)]
    source = problem_source(op, use, {"opinfos": sample["opinfos"], "calls": checked})
    return source.replace(MARKER, MODEL_MARKER), ""


def written_digests(out: Path) -> dict[str, str]:
    """The digests of the files an earlier run wrote (model.json's "files"), to tell an edited file."""
    try:
        return dict(json.loads((out / MANIFEST).read_text()).get("files", {}))
    except (OSError, ValueError, AttributeError, TypeError):
        return {}


def write_problems(rows: list[Row], out: Path, entry: str, opinfo: bool = True) -> tuple[dict[str, str], list[str]]:
    """Each row's problem under out/<name>/problem.py (row.problem set; a row that cannot be one gets its
    reason); returns the digests of the files as written and the lines to say."""
    earlier = written_digests(out)
    digests, lines = {}, []
    fresh = [r for r in rows if not (out / r.name / "problem.py").is_file()]
    samples, line = opinfo_samples([r.ops[0] for r in fresh if r.kind == "operator"]) if opinfo else ({}, "")
    lines += [line] if line else []
    for row in rows:
        path = out / row.name / "problem.py"
        if path.is_file():
            edited = earlier.get(row.name) != digest(path.read_text())
            lines.append(f"{path}: kept as it is ({'edited since written' if edited else 'as written'})")
            row.problem = str(path)
            continue
        source, why = _source(row, entry, samples)
        if source is not None:
            why = _written(path, source)
        if why:
            row.extractable, row.reason = False, why
            lines.append(f"{row.name}: not extracted: {why}")
            continue
        row.problem, digests[row.name] = str(path), digest(source)
    return digests, lines


def _source(row: Row, entry: str, samples: dict[str, dict[str, Any]]) -> tuple[str | None, str]:
    if row.kind == "operator":
        return operator_source(row, entry, samples)
    if not row.source.strip():
        return None, "the region finder gave no problem file"
    return row.source, ""


def _written(path: Path, source: str) -> str:
    """Write the problem file; where it is no valid problem, remove it again and say why ('' where it is)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(source)
    try:
        load_problem(path)
    except ProblemError as e:
        path.unlink()
        if not any(path.parent.iterdir()):
            path.parent.rmdir()
        return str(e)
    return ""


def write_manifest(out: Path, table: dict[str, Any], digests: dict[str, str]) -> Path:
    """DIR/model.json: the table (entry, target, forward, rows with their problems) and the written files'
    digests (earlier ones kept)."""
    files = {**written_digests(out), **digests}
    out.mkdir(parents=True, exist_ok=True)
    path = out / MANIFEST
    path.write_text(json.dumps({**table, "files": files}, indent=1) + "\n")
    return path
