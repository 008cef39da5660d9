"""Honest kernels' verdicts on the cpu target, idle and under load (issue 45: no honest kernel is rejected, idle or
under load; under load it may be `inconclusive`, never `rejected`). For docs/benchmarks/harness.md.

Each kernel of the adversarial honest set, relu_cpp (a C++ extension) and the ranking suite's OpenMP C++ seeds is
evaluated --repeats times in each condition: `idle`; `ci` (one busy process beside the evaluation, as CI's second
test process on two cores); `busy` (one busy process per core).

    python benchmarks/honest_verdicts.py --repeats 3 --out honest_verdicts.json
"""

from __future__ import annotations

import argparse
import collections
import json
import multiprocessing
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from kernelevolve.eval.evaluator import Evaluator  # noqa: E402
from kernelevolve.problem.problem import load_problem  # noqa: E402

ADV = ROOT / "tests" / "adversarial"
FIXTURES = ROOT / "tests" / "fixtures"
RANKING = ROOT / "suites" / "ranking"
FAST_TIMING = {"budget_s": 0.05, "max_iters": 20}  # as the adversarial tests time them


def kernels() -> list[tuple[str, Path, Path]]:
    """(name, problem, candidate): the adversarial honest set as its test pairs them, relu_cpp, the OpenMP seeds."""
    sys.path.insert(0, str(ROOT))
    from tests.adversarial.test_adversarial import HONEST

    found = [(c, p, ADV / "honest" / c) for c, p, _ in HONEST]
    found.append(("relu_cpp.py", FIXTURES / "kb_relu.py", ADV / "honest" / "relu_cpp.py"))
    for name in ("mapid", "jagged_sum", "batch_event_truncate", "merge_bucketized_dense"):
        found.append((f"{name}/seed_cpp.py", RANKING / name / "problem.py", RANKING / name / "seed_cpp.py"))
    return found


def _spin() -> None:
    end = time.monotonic() + 3600
    while time.monotonic() < end:
        pass


def run(condition: str, repeats: int, chosen: list[tuple[str, Path, Path]]) -> list[dict]:
    spinners = {"idle": 0, "ci": 1, "busy": os.cpu_count() or 1}[condition]
    procs = [multiprocessing.Process(target=_spin, daemon=True) for _ in range(spinners)]
    for p in procs:
        p.start()
    rows = []
    try:
        with Evaluator("cpu", timeout_s=300, prestart=True) as ev:
            for _ in range(repeats):
                for name, problem, candidate in chosen:
                    r = ev.evaluate(load_problem(problem), candidate, **FAST_TIMING)
                    row = {"condition": condition, "kernel": name, "status": r.status.value, "speedup": r.speedup}
                    row["load"] = os.getloadavg()[0]  # beside the spinners: other work on the host shows here
                    rows.append({**row, "reason": r.reason[:300], "unreliable": r.unreliable[:200]})
                    print(f"{condition:5s} {name:40s} {r.status.value:13s} {r.reason[:110]}", flush=True)
    finally:
        for p in procs:
            p.kill()
    return rows


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--conditions", default="idle,ci,busy")
    ap.add_argument("--only", default="", help="comma-separated kernel names (default: all)")
    ap.add_argument("--out", type=Path, default=Path("honest_verdicts.json"))
    args = ap.parse_args()
    chosen = [k for k in kernels() if not args.only or k[0] in args.only.split(",")]
    load_start = os.getloadavg()[0]
    rows = [row for c in args.conditions.split(",") for row in run(c, args.repeats, chosen)]
    args.out.write_text(json.dumps({"load_at_start": load_start, "cpus": os.cpu_count(), "rows": rows}, indent=1))
    counts = collections.Counter((r["condition"], r["status"]) for r in rows)
    print(f"\nload average at start {load_start:.2f} on {os.cpu_count()} cores; {args.repeats} repeats")
    print("| condition | load average (min-max) | ok | inconclusive | rejected | other |")
    print("|---|---|---|---|---|---|")
    for c in args.conditions.split(","):
        other = sum(n for (cc, s), n in counts.items() if cc == c and s not in ("ok", "inconclusive", "rejected"))
        loads = [r["load"] for r in rows if r["condition"] == c]
        spread = f"{min(loads):.1f}-{max(loads):.1f}" if loads else "-"
        n = {s: counts[(c, s)] for s in ("ok", "inconclusive", "rejected")}
        print(f"| {c} | {spread} | {n['ok']} | {n['inconclusive']} | {n['rejected']} | {other} |")
    bad = [
        r
        for r in rows
        if r["status"] not in ("ok", "inconclusive") or (r["status"] == "inconclusive" and r["condition"] == "idle")
    ]
    for r in bad:
        print(f"NOT OK: {r['condition']} {r['kernel']} {r['status']}: {r['reason']}")
    return 1 if bad else 0


if __name__ == "__main__":
    raise SystemExit(main())
