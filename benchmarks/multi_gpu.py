"""The evaluation service on several GPUs of one host (issue 50, docs/benchmarks/scale.md): a suite's searches on 1,
2, 4 ... devices of the scheduled local pool (`bench --devices 0,...,N-1`), evaluations per minute per device count
against N times the one-device rate; and whether one device's timings drift while the others are busy (the same
candidate timed on device 0 alone, then beside a bench that keeps devices 1..N-1 busy).

    python benchmarks/multi_gpu.py --counts 1,2,4 --budget 8 --out OUT [--suite ranking] [--drift-repeats 5] \
        [-- BENCH OPTIONS, e.g. --llm replay:RUN]

The bench searches with the tune operator from the suite's seeds unless bench options say otherwise, so every
count makes the same number of evaluations. Counts above the devices present are skipped with a line. On a machine
without CUDA, `--target cpu` runs the same steps with a count of one (a check that the script works; its rates
say nothing of GPUs). Writes OUT/multi_gpu.json and prints a table last.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

TARGET_RATE = 0.85  # issue 50: at least 0.85 x N times the one-device rate


def device_count(target: str) -> int:
    if target == "cpu":
        return 1
    import torch

    return torch.cuda.device_count()


def kernelevolve(*args: str, env: dict[str, str] | None = None, timeout: float | None = None) -> Any:
    return subprocess.run(
        [sys.executable, "-m", "kernelevolve", *args],
        cwd=ROOT,
        env={**os.environ, **(env or {})},
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def bench_args(args: argparse.Namespace, out: Path, devices: list[int]) -> list[str]:
    where = ["--devices", ",".join(map(str, devices))] if args.target != "cpu" else []
    only = ["--only", args.only] if args.only else []
    return [
        "bench", args.suite, "--budget", str(args.budget), "--target", args.target, *where, *only,
        "--out", str(out / "bench"), "--runs-dir", str(out / "runs"),
        *(["--searches", str(args.searches)] if args.searches else []), *args.bench,
    ]  # fmt: skip


def evaluations(runs_dir: Path, results: dict[str, Any]) -> int:
    """Evaluations the bench's searches made: their nodes, less those whose evaluation was reused."""
    from kernelevolve.store.store import Store

    store = Store(runs_dir, read_only=True)
    runs = [row["run"] for row in results["rows"] if row.get("run")]
    return sum(1 for run in runs for node in store.nodes(run) if node.reused_from is None)


def bench_at(args: argparse.Namespace, n: int) -> dict[str, Any]:
    """One bench on devices 0..n-1: its wall, evaluations and rate, and each problem's status."""
    out = args.out / f"devices-{n}"
    t0 = time.monotonic()
    p = kernelevolve(*bench_args(args, out, list(range(n))))
    wall = time.monotonic() - t0
    (out / "bench.log").parent.mkdir(parents=True, exist_ok=True)
    (out / "bench.log").write_text(p.stdout + p.stderr)
    if p.returncode != 0:
        return {"devices": n, "failed": f"bench exit {p.returncode}: {(p.stderr or p.stdout)[-500:]}"}
    results = json.loads((out / "bench" / "results.json").read_text())
    count = evaluations(out / "runs", results)
    return {
        "devices": n,
        "wall_s": round(wall, 1),
        "evaluations": count,
        "per_minute": round(count / wall * 60, 2),
        "statuses": {row["name"]: row["status"] for row in results["rows"]},
    }


def timed(args: argparse.Namespace, repeats: int) -> list[float]:
    """The drift candidate's time on device 0 (ms, its first case), once per fresh `kernelevolve eval`."""
    problem, candidate = args.drift
    env = {} if args.target == "cpu" else {"CUDA_VISIBLE_DEVICES": "0"}
    times = []
    for _ in range(repeats):
        p = kernelevolve("eval", problem, candidate, "--target", args.target, "--json", env=env)
        result = json.loads(p.stdout.strip().splitlines()[-1]) if p.stdout.strip() else {}
        case = (result.get("cases") or [{}])[0]
        if result.get("status") != "ok" or not case.get("t_candidate_ms"):
            raise SystemExit(f"drift candidate not ok: {result.get('status')}: {result.get('reason', p.stderr[-500:])}")
        times.append(case["t_candidate_ms"])
    return times


def beside_busy(args: argparse.Namespace, n: int, repeats: int) -> list[float]:
    """The drift candidate timed on device 0 while a bench keeps devices 1..n-1 busy (its own runs directory)."""
    out = args.out / f"busy-{n}"
    busy = subprocess.Popen(
        [sys.executable, "-m", "kernelevolve", *bench_args(args, out, list(range(1, n)))],
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        time.sleep(args.busy_lead_s)  # the other devices' workers started and timing
        return timed(args, repeats)
    finally:
        busy.kill()
        busy.wait()


def spread(times: list[float]) -> dict[str, float]:
    median = statistics.median(times)
    return {"median_ms": median, "spread": (max(times) - min(times)) / median if median else 0.0}


def drift(alone: list[float], busy: list[float]) -> dict[str, Any]:
    """Whether the median beside busy devices stays within the single-device spread (issue 50's criterion)."""
    a, b = spread(alone), spread(busy)
    shift = abs(b["median_ms"] - a["median_ms"]) / a["median_ms"] if a["median_ms"] else 0.0
    return {"alone": a, "busy": b, "shift": shift, "within_spread": shift <= a["spread"]}


def rates(runs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each count's rate against n x the one-device rate (where one device was measured)."""
    one = next((r["per_minute"] for r in runs if r["devices"] == 1 and "per_minute" in r), None)
    for r in runs:
        if one and "per_minute" in r:
            r["scaling"] = r["per_minute"] / (r["devices"] * one)
            r["meets_target"] = r["scaling"] >= TARGET_RATE
    return runs


def table(report: dict[str, Any]) -> str:
    lines = ["| devices | evaluations | wall s | per minute | x one-device rate per device | target 0.85 |"]
    lines.append("| --- | --- | --- | --- | --- | --- |")
    for r in report["runs"]:
        if "failed" in r:
            lines.append(f"| {r['devices']} | failed: {r['failed'][:80]} | | | | |")
            continue
        scaling = f"{r['scaling']:.2f}" if "scaling" in r else "-"
        meets = {True: "yes", False: "no"}.get(r.get("meets_target"), "-")
        lines.append(
            f"| {r['devices']} | {r['evaluations']} | {r['wall_s']} | {r['per_minute']} | {scaling} | {meets} |"
        )
    for n, d in report["drift"].items():
        lines.append(
            f"\ndrift beside {int(n) - 1} busy device(s): median {d['alone']['median_ms']:.4f} ms alone, "
            f"{d['busy']['median_ms']:.4f} ms busy (shift {d['shift']:.1%}, single-device spread "
            f"{d['alone']['spread']:.1%}): {'within' if d['within_spread'] else 'beyond'} the spread"
        )
    return "\n".join(lines)


def main() -> int:
    argv = sys.argv[1:]
    bench = argv[argv.index("--") + 1 :] if "--" in argv else []
    argv = argv[: argv.index("--")] if "--" in argv else argv
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--counts", default="1,2,4", help="device counts, e.g. 1,2,4")
    parser.add_argument("--suite", default="ranking")
    parser.add_argument("--only", default="", help="problems of the suite (bench's --only)")
    parser.add_argument("--budget", type=int, default=8)
    parser.add_argument("--searches", type=int, default=0, help="bench's --searches (default: the suite's size)")
    parser.add_argument("--target", default="cuda")
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--drift", nargs=2, metavar=("PROBLEM", "CANDIDATE"), default=None)
    parser.add_argument("--drift-repeats", type=int, default=5)
    parser.add_argument("--busy-lead-s", type=float, default=30.0)
    args = parser.parse_args(argv)
    args.bench = bench
    kernel = "candidate_cpp.py" if args.target == "cpu" else "candidate_triton.py"
    args.drift = args.drift or [
        str(ROOT / "examples" / "rmsnorm" / "problem.py"),
        str(ROOT / "examples" / "rmsnorm" / kernel),
    ]
    present = device_count(args.target)
    counts = [int(c) for c in args.counts.split(",")]
    for n in [c for c in counts if c > present]:
        print(f"{n} devices: skipped, {present} present", flush=True)
    counts = [c for c in counts if c <= present]
    report: dict[str, Any] = {"target": args.target, "budget": args.budget, "suite": args.suite, "bench": bench}
    report["runs"], report["drift"] = [], {}
    for n in counts:
        print(f"bench on {n} device(s) ...", flush=True)
        report["runs"].append(bench_at(args, n))
    rates(report["runs"])
    alone = timed(args, args.drift_repeats) if counts else []
    for n in [c for c in counts if c > 1]:
        print(f"drift: device 0 beside {n - 1} busy device(s) ...", flush=True)
        report["drift"][str(n)] = drift(alone, beside_busy(args, n, args.drift_repeats))
    report["alone_ms"] = alone
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "multi_gpu.json").write_text(json.dumps(report, indent=1) + "\n")
    print(table(report))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
