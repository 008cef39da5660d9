"""What benchmarks/scale_device.py reads from its records: each evaluation's and each build's wall-clock interval
(the device's own log), the pool's queue wait and the harness's compile stages in each result; the busy share, the
GPU's time in a compiler while other evaluations were queued, the N-devices model of scale.py and the Markdown
table. Pure functions of plain data, so tests/test_benchmarks.py checks them without a device."""

from __future__ import annotations

import statistics
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))  # its sibling scale.py, however this file was loaded

import scale  # noqa: E402

BUILD_WAIT_S = 5.0  # a candidate's load beyond this is a build on the device, not a cached extension's load
QUEUED_S = 0.05  # a queue wait shorter than this is the pool's hand-over, not work that waited
DEVICES = (1, 2, 4, 8)
ROW = ("candidate", "languages", "status", "device_s", "queue_wait", "compile_load", "first_calls")


def plain(entry: dict[str, Any]) -> dict[str, Any]:
    """A log entry with its result reduced to what the analysis reads (JSON-able)."""
    result = entry.pop("result")
    stages = result.stages
    return {
        **entry,
        "status": result.status.value,
        "device_s": round(entry["ended"] - entry["started"], 4),
        "queue_wait": stages.get("queue_wait", 0.0),
        "compile_load": round(stages.get("compile.load", stages.get("compile", 0.0)), 4),
        "first_calls": round(stages.get("compile.first_calls", 0.0), 4),
    }


def evaluations(log: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [e for e in log if e["kind"] == "evaluation"]


def overlap(a: tuple[float, float], b: tuple[float, float]) -> float:
    return max(0.0, min(a[1], b[1]) - max(a[0], b[0]))


def busy(log: list[dict[str, Any]], wall: float) -> dict[str, float]:
    """The device's busy share over the whole wall, and from its first evaluation's start to its last one's end
    (without the searches' first model answer, during which nothing can be evaluated)."""
    evals = evaluations(log)
    if not evals:
        return {"share": 0.0, "share_from_first": 0.0, "busy_s": 0.0}
    total = sum(e["device_s"] for e in evals)
    span = max(e["ended"] for e in evals) - min(e["started"] for e in evals)
    return {
        "share": round(min(1.0, total / wall), 4),
        "share_from_first": round(min(1.0, total / span), 4) if span > 0 else 1.0,
        "busy_s": round(total, 3),
    }


def compiler_waits(log: list[dict[str, Any]], slow_s: float = BUILD_WAIT_S) -> dict[str, Any]:
    """Each evaluation with the evaluations queued in the pool while it held the device; the device seconds spent
    in the candidate's compile stages (its load, where an extension not yet built is built or waited for, and
    Triton's first calls) while work was queued; and whether a load took over `slow_s` then (a build on the GPU's
    time: the GPU waited on a compiler while work was queued)."""
    evals = evaluations(log)
    waits = [(e["started"] - e["queue_wait"], e["started"]) for e in evals]
    rows = []
    for e in evals:
        queued = sum(
            1
            for (asked, took), other in zip(waits, evals)
            if other is not e and took - asked > QUEUED_S and overlap((asked, took), (e["started"], e["ended"])) > 0
        )
        rows.append({k: e[k] for k in ROW} | {"queued_meanwhile": queued})
    busy_queued = [r for r in rows if r["queued_meanwhile"]]
    slow = [r for r in busy_queued if r["compile_load"] > slow_s]
    return {
        "evaluations": rows,
        "busy_s": round(sum(r["device_s"] for r in rows), 3),
        "compile_s_while_queued": round(sum(r["compile_load"] + r["first_calls"] for r in busy_queued), 3),
        "slow_loads_while_queued": slow,
        "gpu_waited_on_compiler": bool(slow),
    }


def builds(log: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each extension build on a CPU worker (the pool's prebuild), with the seconds the device evaluated meanwhile."""
    intervals = [(e["started"], e["ended"]) for e in evaluations(log)]
    return [
        {
            "candidate": b["candidate"],
            "languages": b["languages"],
            "status": b["status"],
            "build_s": b["device_s"],
            "device_busy_meanwhile_s": round(sum(overlap((b["started"], b["ended"]), i) for i in intervals), 3),
        }
        for b in log
        if b["kind"] == "build"
    ]


def devices_model(problems: dict[str, dict[str, Any]], model_s: float) -> list[dict[str, Any]]:
    """scale.py's model of N devices from each problem's measured per-evaluation device time (its median)."""
    rows = []
    for name, measured in problems.items():
        if not measured["device_s"]:
            continue
        e = statistics.median(measured["device_s"])
        for m in (model_s, 20.0):
            for s in (1, 4, 16):
                cells = [scale.model(n, s, m, e) for n in DEVICES]
                rows.append({"problem": name, "eval_s": round(e, 2), "model_s": m, "searches": s, "devices": cells})
    return rows


def _rate_lines(rate: dict[str, Any]) -> list[str]:
    return [
        f"## Evaluations per minute ({rate['candidate']}, asked at once)",
        "",
        "| repeats | median | device s per evaluation (median) | statuses |",
        "| --- | --- | --- | --- |",
        f"| {', '.join(map(str, rate['per_minute']))} | {statistics.median(rate['per_minute']):.1f} "
        f"| {rate['device_s_median']:.2f} | {', '.join(sorted({e['status'] for e in rate['evaluations']}))} |",
    ]


def _busy_lines(part: dict[str, Any]) -> list[str]:
    lines = [f"## Busy share ({part['candidate']}, model answers after {part['model_s']} s)", ""]
    lines += ["| searches | nodes each | share of the wall | from the first evaluation | wall s |", "| --- " * 5 + "|"]
    for r in part["runs"]:
        shares = f"{r['share']:.3f} | {r['share_from_first']:.3f}"
        lines.append(f"| {r['searches']} | {r['budget']} | {shares} | {r['wall_s']} |")
    return lines


def _per_eval_lines(part: dict[str, Any]) -> list[str]:
    lines = ["## Per-evaluation device time and the N-devices model", "", "| problem | device s | statuses |"]
    lines.append("| --- | --- | --- |")
    for name, p in part["problems"].items():
        lines.append(f"| {name} | {', '.join(f'{s:.2f}' for s in p['device_s'])} | {', '.join(p['statuses'])} |")
    lines += ["", "| problem | eval s | model s | searches | " + " | ".join(f"{n} dev" for n in DEVICES) + " |"]
    lines.append("| --- " * (4 + len(DEVICES)) + "|")
    for r in part["model"]:
        cells = " | ".join(f"{rate:.1f} ({share:.0%})" for rate, share in r["devices"])
        lines.append(f"| {r['problem']} | {r['eval_s']} | {r['model_s']:g} | {r['searches']} | {cells} |")
    return lines


def _builds_lines(part: dict[str, Any]) -> list[str]:
    lines = ["## Compiles beside the GPU (two searches, Triton and CUDA-extension candidates)", ""]
    lines.append("| candidate | kind | status | device s | queue wait s | load s | first calls s | queued meanwhile |")
    lines.append("| --- " * 8 + "|")
    for r in part["evaluations"]:
        lines.append(
            f"| {r['candidate'][:8]} | {r['languages']} | {r['status']} | {r['device_s']:.2f} | {r['queue_wait']:.2f} "
            f"| {r['compile_load']:.2f} | {r['first_calls']:.2f} | {r['queued_meanwhile']} |"
        )
    for b in part["builds"]:
        what = f"{b['candidate'][:8]} ({b['languages']}) {b['status']}, {b['build_s']:.1f} s"
        lines.append(
            f"\nbuild on a CPU worker: {what}, the GPU evaluating for {b['device_busy_meanwhile_s']:.1f} s of it"
        )
    lines.append(
        f"\nGPU in compile stages while work was queued: {part['compile_s_while_queued']:.2f} s of "
        f"{part['busy_s']:.2f} s busy; waited on a compiler (a load over {BUILD_WAIT_S:g} s) while work was queued: "
        f"{'yes' if part['gpu_waited_on_compiler'] else 'no'}"
    )
    return lines


def markdown(out: dict[str, Any]) -> str:
    """The run's figures as Markdown: a header line, then one section per part measured."""
    lines = [f"{out['date']}, {out['machine']}, {out['versions']}, target {out['target']}"]
    for part, render in (("rate", _rate_lines), ("busy", _busy_lines), ("per_eval", _per_eval_lines),
                         ("builds", _builds_lines)):  # fmt: skip
        if part in out:
            lines += (
                ["", f"## {part}: failed: {out[part]['failed']}"] if "failed" in out[part] else ["", *render(out[part])]
            )
    return "\n".join(lines)


if __name__ == "__main__":  # the table of a run's JSON, e.g. one cut short by its time limit
    import json
    import sys
    from pathlib import Path

    print(markdown(json.loads(Path(sys.argv[1]).read_text())))
