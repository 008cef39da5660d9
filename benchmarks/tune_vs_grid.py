"""The tune operator with each strategy against exhaustive grid search, on a GPU (docs/benchmarks/search.md).

1. Evaluates every configuration of the seed's TUNABLES (108 for the Triton GEMM) through the harness.
2. Runs the search driver once per strategy, each in a fresh store (no evaluation shared with the grid or
   another strategy), with a budget of a quarter of the grid.
3. Reports each strategy's best fitness against the grid's best (target: within 5%), the driver's
   evaluations per minute, and the median seconds per stage of the grid's evaluations (the harness's fixed
   cost per evaluation, back to back, with the evaluator's spare workers).

The JSON is rewritten after each grid evaluation and after each strategy, so a run stopped early keeps what it
finished; running the same --grid-only command again resumes the grid.

    python benchmarks/tune_vs_grid.py --out tune_vs_grid.json [--grid-only | --search-only] [--spares N]
    python benchmarks/tune_vs_grid.py --report GRID_JSON SEARCH_JSON ... --out merged.json   # compare runs
    python benchmarks/tune_vs_grid.py --target cpu --problem P --seed K   # any seed with TUNABLES (CI smoke test)
"""

from __future__ import annotations

import argparse
import itertools
import json
import math
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from kernelevolve.eval.evaluator import Evaluator  # noqa: E402
from kernelevolve.operators import tune  # noqa: E402
from kernelevolve.problem.problem import load_problem, source_hash  # noqa: E402
from kernelevolve.search import session  # noqa: E402
from kernelevolve.search.strategies import STRATEGIES  # noqa: E402
from kernelevolve.store.store import Store  # noqa: E402

HERE = ROOT / "benchmarks" / "tune_vs_grid"


def grid(problem, seed_source: str, target: str, out: dict, out_path: Path, spares: int | bool = True) -> None:
    """Every configuration once; resumes a partial grid already in `out` (the JSON is rewritten after each)."""
    tunables = tune.find_tunables(seed_source)
    names = sorted(tunables)
    configs = list(itertools.product(*(tunables[n].choices for n in names)))
    out.setdefault("grid", [])
    done = {json.dumps(g["params"], sort_keys=True) for g in out["grid"]}
    spent = 60 * out.get("grid_minutes", 0.0)
    t0 = time.monotonic()
    with Evaluator(target, prestart=spares) as ev, tempfile.TemporaryDirectory() as tmp:
        for i, values in enumerate(configs):
            params = dict(zip(names, values))
            if json.dumps(params, sort_keys=True) in done:
                continue
            path = Path(tmp) / f"c{i}.py"
            path.write_text(tune.apply(seed_source, params))
            r = ev.evaluate(problem, path, trials=1, compile_baseline=False)
            out["grid"].append({"params": params, "status": r.status.value, "fitness": r.fitness, "stages": r.stages})
            out["grid_minutes"] = (spent + time.monotonic() - t0) / 60
            out["grid_complete"] = len(out["grid"]) == len(configs)
            out_path.write_text(json.dumps(out, indent=1))
            print(f"grid {len(out['grid'])}/{len(configs)} {params} {r.status.value} {r.fitness}", flush=True)
    stages = sorted({k for g in out["grid"] for k in g["stages"]})
    out["grid_stage_median_s"] = {k: statistics.median(g["stages"].get(k, 0.0) for g in out["grid"]) for k in stages}
    out["grid_wall_s_per_eval"] = 60 * out.get("grid_minutes", 0.0) / max(len(out["grid"]), 1)
    out["grid_complete"] = len(out["grid"]) == len(configs)
    out_path.write_text(json.dumps(out, indent=1))


def search(
    problem_path: Path,
    seed: Path,
    target: str,
    out: dict,
    strategies: list[str],
    fraction: float,
    out_path: Path,
    spares: int | bool = True,
) -> None:
    tunables = tune.find_tunables(seed.read_text())
    budget = math.ceil(fraction * math.prod(len(t.choices) for t in tunables.values()))
    out["budget"] = budget
    out.setdefault("search", {})
    for name in strategies:
        if name in out["search"]:
            print(f"search {name}: already in the results, skipped", flush=True)
            continue
        with tempfile.TemporaryDirectory() as tmp:
            spec = session.RunSpec(problem_path, seed, target=target, strategy=name, trials=1, compile_baseline=False)
            limits = session.Limits(budget=budget)
            opened = session.open_run(Store(tmp), spec, limits)
            with Evaluator(target, prestart=spares) as ev:
                driver = session.build_driver(opened, [ev], warm_start=False)
                t0 = time.monotonic()
                reason = driver.run_search()
                minutes = (time.monotonic() - t0) / 60
            best = driver.graph.best()
            out["search"][name] = {
                "best_fitness": best.fitness if best else None,
                "best_params": best.params if best else None,
                "nodes": len(driver.graph),
                "minutes": minutes,
                "evals_per_minute": len(driver.graph) / minutes,
                "stop_reason": reason,
            }
            print(f"search {name}: {out['search'][name]}", flush=True)
            out_path.write_text(json.dumps(out, indent=1))


def report(out: dict) -> None:
    """Each strategy's best against the grid's best (the target: within 5%, with at most 25% of its evaluations)."""
    grid_rows = out.get("grid", [])
    if not grid_rows:
        print("no grid in these results: nothing to compare the strategies with")
        return
    best_grid = max((g["fitness"] or 0) for g in grid_rows)
    done = "" if out.get("grid_complete") else f", grid incomplete: {len(grid_rows)} configurations"
    print(f"\n| strategy | best fitness | of grid best ({best_grid:.3f}{done}) | nodes | evals/min |")
    print("|---|---|---|---|---|")
    for name, s in out.get("search", {}).items():
        ratio = (s["best_fitness"] or 0) / best_grid if best_grid else 0
        fit, per_min = s["best_fitness"] or 0, s["evals_per_minute"]
        print(f"| {name} | {fit:.3f} | {100 * ratio:.1f}% | {s['nodes']} | {per_min:.1f} |")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--target", default="cuda")
    ap.add_argument("--out", type=Path, default=Path("tune_vs_grid.json"))
    ap.add_argument("--fraction", type=float, default=0.25)
    ap.add_argument("--strategies", default=",".join(STRATEGIES))
    ap.add_argument("--spares", type=int, help="spare workers kept started (default: the evaluator's)")
    ap.add_argument("--grid-only", action="store_true", help="the grid alone; the same command again resumes it")
    ap.add_argument("--search-only", action="store_true", help="the strategies alone (on another GPU, say)")
    ap.add_argument("--report", type=Path, nargs="+", help="merge a grid JSON with search JSONs and compare")
    ap.add_argument("--problem", type=Path, default=HERE / "matmul_problem.py")
    ap.add_argument("--seed", type=Path, default=HERE / "matmul_triton.py", help="a kernel that declares TUNABLES")
    args = ap.parse_args()
    if args.report:
        merged = json.loads(args.report[0].read_text())
        for extra in args.report[1:]:
            merged.setdefault("search", {}).update(json.loads(extra.read_text()).get("search", {}))
        args.out.write_text(json.dumps(merged, indent=1))
        report(merged)
        return
    problem = load_problem(args.problem)
    seed_source = args.seed.read_text()
    seed_hash = source_hash(seed_source)
    spares: int | bool = True if args.spares is None else args.spares
    out: dict = {}
    if args.out.exists() and json.loads(args.out.read_text()).get("seed_hash") == seed_hash:
        out = json.loads(args.out.read_text())  # resume this seed's partial grid, keep its finished strategies
        print(f"resuming {args.out}: {len(out.get('grid', []))} grid configurations done", flush=True)
    out.update(date=time.strftime("%Y-%m-%d"), seed_hash=seed_hash)
    if not args.search_only:
        grid(problem, seed_source, args.target, out, args.out, spares)
    if not args.grid_only:
        search(args.problem, args.seed, args.target, out, args.strategies.split(","), args.fraction, args.out, spares)
        report(out)


if __name__ == "__main__":
    main()
