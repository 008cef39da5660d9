"""A run's report as plain data, read from the store: the summary, every node as the charts and the graph draw it,
the best kernel's and the exported module's cases, and the LLM accounting. Pure reading: the static report
and the live view render the same dict, and the tests check it without a browser."""

from __future__ import annotations

import hashlib
import json
import math
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from kernelevolve.report.layout import tree_layout
from kernelevolve.report.node import NodeDetail, kind_of, node_detail
from kernelevolve.result import CaseResult, EvalResult
from kernelevolve.search.export import winners
from kernelevolve.store.models import Node, Run
from kernelevolve.store.store import Store

# The kinds of step, in the order the legend lists them (node.kind_of).
KINDS = ("seed", "start", "warm-start", "draft", "refine", "debug", "tune", "crossover")
CASE_FIELDS = (
    "shape",
    "correct",
    "correctness",
    "reason",
    "trials",
    "error_ratio",
    "max_abs_err",
    "max_rel_err",
    "norm_err",
    "kernelbench_correct",
    "t_candidate_ms",
    "t_eager_ms",
    "t_compile_ms",
    "speedup",
    "speedup_graph",
    "t_roofline_ms",
    "t_copy_ms",
    "t_bytes_ms",
    "min_bytes",
    "memory_bound",
)
# What a case's timing row shows, from an evaluation or from a bench row's case (suites/bench.row_from).
TIMING_FIELDS = ("t_candidate_ms", "t_eager_ms", "t_compile_ms", "t_roofline_ms", "t_copy_ms", "t_bytes_ms")
BEST_WITH_COMPILE = "best_with_compile.json"  # search/session.final_with_compile


def problem_name(run: Run) -> str:
    """As `kernelevolve runs` names it: the problem's folder for a suite's problem.py, else the file's name."""
    path = Path(run.problem_path)
    return path.parent.name if path.name == "problem.py" else path.name


def run_data(
    store: Store, run: Run, *, details: bool = True, exported: list[dict[str, Any]] | None = None
) -> dict[str, Any]:
    """The report of one run. details: every node's record (source, diffs, evaluation, analysis, documents,
    prompt and answer) for a self-contained file; the live view leaves them out and serves them on request.
    exported: the cases of the exported module's evaluation (a bench row's), shown beside the best kernel's."""
    run = store.get_run(run.id) or run  # the row as stored now: status and stop reason move while it runs
    rows = store.nodes(run.id)
    by_id = {n.id: n for n in rows}
    step = {n.id: n.step for n in rows}
    positions = tree_layout([(n.id, [e.parent_id for e in n.parents]) for n in rows])
    nodes = []
    best: Node | None = None
    best_so_far = None
    for n in rows:
        if n.correct and n.fitness is not None and (best is None or n.fitness > (best.fitness or 0.0)):
            best = n
        best_so_far = best.fitness if best is not None else None
        x, depth = positions[n.id]
        nodes.append(
            {
                "step": n.step,
                "kind": kind_of(n, by_id),
                "operator": n.operator,
                "status": n.status,
                "correct": n.correct,
                "fitness": n.fitness,
                "speedup": n.speedup,
                "reason": n.reason[:300],
                "params": json.loads(n.params or "{}"),
                "parents": [step[e.parent_id] for e in n.parents if e.parent_id in step],
                "island": n.island,
                "reused": n.reused_from is not None,
                "t_s": _seconds(run.created, n.created),
                "best_so_far": best_so_far,
                "x": x,
                "depth": depth,
            }
        )
    calls = store.llm_calls(run.id)
    config = json.loads(run.config or "{}")
    data: dict[str, Any] = {
        "kind": "run",
        "run": {
            "id": run.id,
            "problem": problem_name(run),
            "problem_path": run.problem_path,
            "platform": run.platform,
            "status": run.status,
            "stop_reason": run.stop_reason,
            "strategy": config.get("strategy", ""),
            "llm": config.get("llm", []),
            "budget": run.budget,
            "elapsed_s": run.elapsed_s,
            "created": _iso(run.created),
            "updated": _iso(run.updated),
        },
        "nodes": nodes,
        "statuses": _counts(n.status for n in rows),
        "best": _best(store, run, best, by_id) if best is not None else None,
        "cases": cases_data(store, run, best, exported),
        "llm": llm_data(store, run.id, rows, calls),
        "details": {},
    }
    if details:
        data["details"] = {str(n.step): detail_json(node_detail(store, run, n, rows)) for n in rows}
    data["version"] = version(data)
    return data


def version(data: dict[str, Any]) -> str:
    """A digest of what the page shows: the live view redraws only when it changes."""
    shown = {k: v for k, v in data.items() if k not in ("version", "details")}
    return hashlib.sha256(json.dumps(clean(shown), sort_keys=True, default=str).encode()).hexdigest()[:16]


def _best(store: Store, run: Run, best: Node, by_id: dict[int, Node]) -> dict[str, Any]:
    lineage = []
    current: Node | None = best
    while current is not None and current.step not in lineage:
        lineage.append(current.step)
        current = by_id.get(current.parents[0].parent_id) if current.parents else None
    final = best_with_compile(store, run, best) or store.evaluation(best.id)  # the search's own, if it timed it
    return {
        "step": best.step,
        "kind": kind_of(best, by_id),
        "fitness": best.fitness,
        "speedup": best.speedup,
        "speedup_compile": final.speedup_over("compile") if final is not None else None,
        "lineage": lineage,
    }


def best_with_compile(store: Store, run: Run, best: Node | None) -> EvalResult | None:
    """The best kernel's evaluation with the torch.compile baseline (written when a run finishes), if it is of the
    best node's source: a run resumed since may have a better one."""
    if best is None:
        return None
    try:
        final = EvalResult.model_validate_json(store.read(f"{run.id}/{BEST_WITH_COMPILE}"))
    except (OSError, ValueError):
        return None
    return final if final.candidate_hash in ("", best.source_hash) else None


def cases_data(
    store: Store, run: Run, best: Node | None, exported: list[dict[str, Any]] | None = None
) -> list[dict[str, Any]]:
    """Per shape case: the best kernel's times and speedups (over torch.compile from its final evaluation where
    the search ran without it), the kernel the export serves it with (search/export.winners), and the exported
    module's own measurement where one was made (bench), with the roofline floor and the device copy wherever
    the harness measured them."""
    evaluations = store.evaluations(run.id, correct_only=True)
    result = evaluations.get(best.id) if best is not None else None
    shapes = [c.shape for c in result.cases] if result is not None else [c.get("shape", {}) for c in exported or []]
    if not shapes:
        return []
    step = {n.id: n.step for n in store.nodes(run.id)}
    served = winners(sorted(evaluations.items()), len(shapes))
    final = best_with_compile(store, run, best)
    out = []
    for i, shape in enumerate(shapes):
        case = result.cases[i] if result is not None and i < len(result.cases) else None
        with_compile = final.cases[i] if final is not None and i < len(final.cases) else None
        out.append(
            {
                "case": i,
                "shape": shape,
                "best": _timing_of(case, with_compile) if case is not None else None,
                "export": {"node": step.get(served[i][1]), "speedup": served[i][0]} if served[i] else None,
                "exported": _timing_of_row(exported[i]) if exported and i < len(exported) else None,
            }
        )
    return out


def _timing_of(case: CaseResult, with_compile: CaseResult | None) -> dict[str, Any]:
    timing = {k: getattr(case, k) for k in TIMING_FIELDS}
    timing["speedup_eager"] = _ratio(case.t_eager_ms, case.t_candidate_ms)
    timing["speedup_compile"] = _ratio(case.t_compile_ms, case.t_candidate_ms)
    if with_compile is not None and with_compile.t_compile_ms:
        timing["t_compile_ms"] = with_compile.t_compile_ms
        timing["speedup_compile"] = _ratio(with_compile.t_compile_ms, with_compile.t_candidate_ms)
    return timing


def _timing_of_row(case: dict[str, Any]) -> dict[str, Any]:
    timing = {k: case.get(k) for k in TIMING_FIELDS}
    timing["speedup_eager"] = case.get("speedup_eager")
    timing["speedup_compile"] = case.get("speedup_compile")
    return timing


def answer_counts(nodes: list[Node], calls: list[dict[str, Any]]) -> dict[str, int]:
    """What became of the model's answers: answered (not an error, not pending), parsed (usable), and of the
    nodes evaluated from them, compiled and correct; duplicates, errors and pending calls beside them. An
    unusable answer is a rejected node whose reason says so (operators/universal.py)."""
    done = [c for c in calls if c["outcome"] != "pending"]
    answered = [c for c in done if c["outcome"] != "error"]
    model_nodes = [n for n in nodes if n.operator.startswith("llm")]
    evaluated = [n for n in model_nodes if not (n.status == "rejected" and n.reason.startswith("unusable response"))]
    return {
        "calls": len(done),
        "answered": len(answered),
        "parsed": len(answered) - sum(c["outcome"] == "unusable" for c in answered),
        "evaluated": len(evaluated),
        "compiled": sum(n.status != "compile_error" for n in evaluated),
        "correct": sum(n.correct for n in evaluated),
        "duplicates": sum(c["outcome"] == "duplicate" for c in done),
        "errors": sum(c["outcome"] == "error" for c in done),
        "pending": len(calls) - len(done),
    }


def llm_data(store: Store, run_id: str, nodes: list[Node], calls: list[dict[str, Any]]) -> dict[str, Any]:
    """Per model: calls, failures, tokens, cost and latency (Store.llm_usage), and what the answers became."""
    usage = store.llm_usage(run_id)
    models = [
        {
            "model": model,
            "calls": int(u["calls"]),
            "failed": int(u["failed"]),
            "prompt_tokens": int(u["prompt_tokens"]),
            "completion_tokens": int(u["completion_tokens"]),
            "cost": u["cost"],
            "mean_latency_s": u["latency_s"] / u["calls"] if u["calls"] else None,
        }
        for model, u in usage.items()
    ]
    return {
        "models": models,
        "answers": answer_counts(nodes, calls),
        "cost": sum(m["cost"] for m in models),
        "tokens": sum(m["prompt_tokens"] + m["completion_tokens"] for m in models),
    }


def detail_json(d: NodeDetail) -> dict[str, Any]:
    """A node's record for the page: paths as strings, the evaluation's fields a person reads per case."""
    result = d.evaluation
    evaluation = None
    if result is not None:
        evaluation = {
            **result.model_dump(
                mode="json",
                include={
                    "status",
                    "correct",
                    "reason",
                    "baseline",
                    "fitness",
                    "speedup",
                    "speedup_graph",
                    "compile_baseline",
                    "review",
                    "device",
                    "target",
                    "languages",
                    "interpreted",
                    "sandbox",
                    "stages",
                    "profile",
                },
            ),
            "speedup_compile": result.speedup_over("compile"),
            "cases": [
                {
                    **c.model_dump(mode="json", include=set(CASE_FIELDS)),
                    "speedup_eager": _ratio(c.t_eager_ms, c.t_candidate_ms),
                    "speedup_compile": _ratio(c.t_compile_ms, c.t_candidate_ms),
                }
                for c in result.cases
            ],
        }
    call = None
    if d.llm_call is not None:
        keys = ("seq", "model", "outcome", "prompt_tokens", "completion_tokens", "cost", "latency_s")
        call = {k: d.llm_call[k] for k in keys} | {
            "prompt": d.llm_call["prompt"],
            "answer": d.llm_call["answer"],
            "prompt_file": d.llm_call["prompt_file"],
            "answer_file": d.llm_call["answer_file"],
        }
    return {
        "step": d.step,
        "kind": d.kind,
        "operator": d.operator,
        "status": d.status,
        "correct": d.correct,
        "fitness": d.fitness,
        "speedup": d.speedup,
        "reason": d.reason,
        "params": d.params,
        "parents": [{"step": s, "operator": o} for s, o in d.parents],
        "reused": d.reused,
        "folder": str(d.folder),
        "files": d.files,
        "kernel": str(d.kernel),
        "source": d.source,
        "diffs": [{"parent": x.parent, "operator": x.operator, "text": x.text} for x in d.diffs],
        "evaluation": evaluation,
        "log": d.log,
        "analysis": {k: v for k, v in (d.analysis or {}).items() if k not in ("node_id", "knowledge")},
        "knowledge": d.knowledge,
        "llm_call": call,
    }


def runs_data(store: Store) -> list[dict[str, Any]]:
    """Every run of the store, newest first, as the live view's index lists them."""
    out = []
    for run, count, best in store.runs():
        config = json.loads(run.config or "{}")
        out.append(
            {
                "id": run.id,
                "problem": problem_name(run),
                "platform": run.platform,
                "strategy": config.get("strategy", ""),
                "status": run.status,
                "stop_reason": run.stop_reason,
                "nodes": count,
                "best": best,
                "created": _iso(run.created),
                "updated": _iso(run.updated),
            }
        )
    return sorted(out, key=lambda r: r["created"] or "", reverse=True)


def clean(value: Any) -> Any:
    """JSON as a browser parses it: NaN and infinities (an error of a wrong kernel) become null."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {str(k): clean(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [clean(v) for v in value]
    return value


def _ratio(base: float | None, t: float | None) -> float | None:
    return base / t if base and t else None


def _counts(values: Any) -> dict[str, int]:
    out: dict[str, int] = {}
    for v in values:
        out[v] = out.get(v, 0) + 1
    return out


def _utc(moment: datetime) -> datetime:
    return moment.replace(tzinfo=timezone.utc) if moment.tzinfo is None else moment  # SQLite drops the zone


def _seconds(start: datetime | None, moment: datetime | None) -> float | None:
    return (_utc(moment) - _utc(start)).total_seconds() if start and moment else None


def _iso(moment: datetime | None) -> str | None:
    return _utc(moment).isoformat(timespec="seconds") if moment else None
