"""What a model did in a search, from the store: per run, the steps to its first correct kernel, the best fitness
and speedup, the share of answers that parsed, compiled and were correct, tokens per call (estimated from
characters where the provider reports none: exec and inbox), and the fitness trajectory (best so far per node).

    python benchmarks/llm_report.py RUNS_DIR [--json OUT] [RUN ...]   # every run in RUNS_DIR, or the named ones
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from kernelevolve.report.data import answer_counts, problem_name  # noqa: E402
from kernelevolve.store.store import Store  # noqa: E402


def report(store: Store, run_id: str) -> dict[str, Any]:
    run = store.get_run(run_id)
    nodes = store.nodes(run_id)
    calls = store.llm_calls(run_id)
    counts = answer_counts(nodes, calls)  # the run report's own account of the answers
    answered = [c for c in calls if c["outcome"] not in ("pending", "error")]
    first = next((n.step for n in nodes if n.correct), None)
    best, trajectory = None, []
    for n in nodes:
        if n.correct and n.fitness and (best is None or n.fitness > best):
            best = n.fitness
        trajectory.append(round(best, 3) if best else None)
    tokens = [c["prompt_tokens"] + c["completion_tokens"] for c in answered]  # exec/inbox: estimated
    return {
        "run": run_id,
        "problem": problem_name(run),
        "status": run.status,
        "nodes": len(nodes),
        "llm_calls": counts["calls"],
        "first_correct_step": first,
        "best_fitness": best,
        "parsed": _share(counts["parsed"], counts["answered"]),
        "compiled": _share(counts["compiled"], counts["evaluated"]),
        "correct": _share(counts["correct"], counts["evaluated"]),
        "duplicates": counts["duplicates"],
        "tokens_per_call": round(sum(tokens) / len(tokens)) if tokens else None,
        "prompt_tokens_per_call": round(sum(c["prompt_tokens"] for c in answered) / len(answered)) if answered else 0,
        "statuses": [n.status for n in nodes],
        "trajectory": trajectory,
    }


def _share(k: int, n: int) -> str:
    return f"{k}/{n}" if n else "-"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("runs_dir", type=Path)
    ap.add_argument("runs", nargs="*")
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    store = Store(args.runs_dir)
    ids = args.runs or [r.id for r, _, _ in store.runs()]
    rows = [report(store, i) for i in ids]
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1))
    print("| problem | nodes | first correct (step) | best fitness | parsed | compiled | correct | tokens/call |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    for r in rows:
        best = f"{r['best_fitness']:.3g}x" if r["best_fitness"] else "-"
        print(
            f"| {r['problem']} | {r['nodes']} | {r['first_correct_step'] or '-'} | {best} | {r['parsed']} | "
            f"{r['compiled']} | {r['correct']} | {r['tokens_per_call'] or '-'} |"
        )
    bests = [r["best_fitness"] for r in rows if r["best_fitness"]]
    if bests:
        geo = math.exp(sum(math.log(b) for b in bests) / len(bests))
        fast = {p: sum(b > p for b in bests) / len(rows) for p in (1.0, 1.5)}
        print(f"\ngeometric mean of the best fitness: {geo:.3g}x over {len(bests)} of {len(rows)} problems; ", end="")
        print(f"fast_1 {fast[1.0]:.2f}, fast_1.5 {fast[1.5]:.2f}")
    print("trajectories (best so far per node):")
    for r in rows:
        print(f"  {r['problem']}: {r['trajectory']}")


if __name__ == "__main__":
    main()
