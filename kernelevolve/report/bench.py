"""A `bench` output folder's report as plain data: its rows, fast_p, the targets, and the roofline and HBM rules,
computed by the suite's own functions (suites/bench.py) from results.json, so the page says what results.md
says."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

from kernelevolve.suites.bench import (
    BASELINE_NOTE,
    HBM_RULE_SHARE,
    ROOFLINE_RULE_COMPILE_ABOVE,
    ROOFLINE_RULE_WITHIN,
    BenchRow,
    fast_p,
    hbm_rule,
    roofline_rule,
)
from kernelevolve.suites.scores import scores

RESULTS = "results.json"
FAST_P = (1.0, 1.5, 2.0)


class BenchReportError(Exception):
    """The folder is not a bench output (no readable results.json)."""


def is_bench_folder(path: Path) -> bool:
    return path.is_dir() and (path / RESULTS).is_file()


def load_results(folder: Path) -> dict[str, Any]:
    path = folder / RESULTS
    try:
        results = json.loads(path.read_text())
    except FileNotFoundError:
        raise BenchReportError(f"{folder} holds no {RESULTS}: give a `kernelevolve bench` output folder") from None
    except (OSError, ValueError) as e:
        raise BenchReportError(f"cannot read {path}: {e}") from None
    if not isinstance(results, dict) or not isinstance(results.get("rows"), list):
        raise BenchReportError(f"{path} is not a bench results file (no rows)")
    return results


def rows_of(results: dict[str, Any]) -> list[BenchRow]:
    """results.json's rows as BenchRows; fields a later version added are ignored, missing ones take defaults."""
    known = {f.name for f in dataclasses.fields(BenchRow)}
    return [BenchRow(**{k: v for k, v in r.items() if k in known}) for r in results["rows"]]


def bench_data(results: dict[str, Any], links: dict[str, str] | None = None) -> dict[str, Any]:
    """The page's data. links: a problem's run report, relative to the page, where one was written."""
    rows = rows_of(results)
    links = links or {}
    compile_timed = any(r.speedup_compile for r in rows)
    keep = bool(results.get("keep_unreliable", False))  # rows a contended host left unreliable: as the bench said
    return {
        "kind": "bench",
        "suite": results.get("suite", ""),
        "target": results.get("target", ""),
        "date": results.get("date", ""),
        "rows": [
            {
                "name": r.name,
                "status": r.status,
                "correct": r.correct,
                "kernelbench_correct": r.kernelbench_correct,
                "speedup_eager": r.speedup_eager,
                "speedup_compile": r.speedup_compile,
                "speedup_best": r.speedup_best,
                "worst_case": r.worst_case,
                "roofline": r.roofline,
                "seed": r.seed,
                "run": r.run,
                "reason": r.reason,
                "search": r.search,
                "review": r.review,
                "unreliable": r.unreliable,
                "report": links.get(r.name),
                "cases": len(r.cases),
            }
            for r in rows
        ],
        "fast_p": {
            "p": list(FAST_P),
            "eager": [fast_p(rows, p, "speedup_eager", keep) for p in FAST_P],
            "compile": [fast_p(rows, p, "speedup_compile", keep) for p in FAST_P] if compile_timed else None,
        },
        "targets": [{"problem": r.name, **r.target} for r in rows if r.target],
        "roofline_rule": {
            "compile_above": ROOFLINE_RULE_COMPILE_ABOVE,
            "within": ROOFLINE_RULE_WITHIN,
            "cases": roofline_rule(rows),
        },
        "hbm_rule": {"share": HBM_RULE_SHARE, "cases": hbm_rule(rows)},
        "baseline": BASELINE_NOTE,
        "scores": scores(rows),
    }
