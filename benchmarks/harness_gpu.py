"""Harness measurements on a CUDA GPU, for docs/benchmarks/harness.md.

Reports: the examples' verdicts on cuda; the per-stage wall time of one evaluation; the spread of the
measured speedup over N repeated evaluations of the same candidate (coefficient of variation); the
agreement of the harness's median candidate time with triton.testing.do_bench on the same kernel.

    python benchmarks/harness_gpu.py --out results.json
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from kernelevolve.eval.evaluator import Evaluator  # noqa: E402
from kernelevolve.problem.problem import load_problem  # noqa: E402
from kernelevolve.result import EvalResult  # noqa: E402

EXAMPLES = ROOT / "examples"


def _load(path: Path, name: str):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def primary_modules(example: str):
    """The example's candidate and reference modules on the GPU, with the primary case's inputs."""
    import torch

    prob = _load(EXAMPLES / example / "problem.py", f"{example}_problem")
    cand = _load(EXAMPLES / example / "candidate_triton.py", f"{example}_candidate")
    for k, v in getattr(prob, "SHAPE_CASES", [{}])[0].items():
        setattr(prob, k, v)
    torch.manual_seed(0)
    inputs = [x.cuda() if isinstance(x, torch.Tensor) else x for x in prob.get_inputs()]
    torch.manual_seed(1)
    ref = prob.Model(*prob.get_init_inputs()).cuda().eval()
    new = cand.ModelNew(*prob.get_init_inputs()).cuda().eval()
    new.load_state_dict(ref.state_dict(), strict=False)
    return new, ref, inputs


def do_bench_primary(example: str) -> dict[str, float]:
    """do_bench (median, L2 cleared between runs) of the candidate and the eager reference, primary case."""
    import torch
    from triton.testing import do_bench

    new, ref, inputs = primary_modules(example)
    with torch.no_grad():
        t_new = do_bench(lambda: new(*inputs), warmup=100, rep=500, return_mode="median")
        t_ref = do_bench(lambda: ref(*inputs), warmup=100, rep=500, return_mode="median")
    return {"candidate_ms": t_new, "eager_ms": t_ref}


def summarize(results: list[EvalResult]) -> dict[str, float]:
    speedups = [r.speedup for r in results if r.speedup]
    firsts = [r.cases[0].timing for r in results if r.cases]
    primary = [t.candidate.median_ms for t in firsts if t.candidate.median_ms]
    primary_eager = [t.eager.median_ms for t in firsts if t.eager.median_ms]
    graph = [r.speedup_graph for r in results if r.speedup_graph]
    mean = statistics.mean(speedups)
    return {
        "n": len(speedups),
        "speedup_mean": mean,
        "speedup_cv_pct": 100 * statistics.stdev(speedups) / mean if len(speedups) > 1 else 0.0,
        "speedup_min": min(speedups),
        "speedup_max": max(speedups),
        "graph_speedup_mean": statistics.mean(graph) if graph else None,
        "graph_speedup_cv_pct": 100 * statistics.stdev(graph) / statistics.mean(graph) if len(graph) > 1 else None,
        "primary_candidate_ms_median": statistics.median(primary),
        "primary_eager_ms_median": statistics.median(primary_eager),
        "primary_candidate_host_ms_median": statistics.median(
            t.candidate.host_ms for t in firsts if t.candidate.host_ms
        ),
        "primary_candidate_graph_ms_median": statistics.median(
            t.candidate.graph_ms for t in firsts if t.candidate.graph_ms
        ),
    }


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeats", type=int, default=10, help="repeated evaluations without the compile baseline")
    ap.add_argument("--compile-repeats", type=int, default=5, help="repeated evaluations with it")
    ap.add_argument("--out", type=Path, default=Path("harness_gpu.json"))
    ap.add_argument("--examples", default="softmax,rmsnorm", help="comma-separated examples to measure")
    args = ap.parse_args()
    report: dict = {"date": time.strftime("%Y-%m-%d"), "examples": {}}
    with Evaluator("cuda", timeout_s=600, prestart=True) as ev:
        for example in args.examples.split(","):
            problem = load_problem(EXAMPLES / example / "problem.py")
            entry: dict = {}
            for kind in ("triton", "wrong"):
                t0 = time.perf_counter()
                r = ev.evaluate(problem, EXAMPLES / example / f"candidate_{kind}.py")
                entry[kind] = {"wall_s": time.perf_counter() - t0, **r.model_dump(mode="json", exclude={"log_tail"})}
                print(
                    f"{example:8s} {kind:7s} {r.status.value:14s} speedup={r.speedup} graph={r.speedup_graph} "
                    f"stages={ {k: round(v, 2) for k, v in r.stages.items()} } {r.reason[:120]}",
                    flush=True,
                )
            for label, kwargs, repeats in (
                ("with_compile", {}, args.compile_repeats),
                ("no_compile", {"compile_baseline": False}, args.repeats),
            ):
                if repeats < 1:
                    continue
                runs, walls = [], []
                for _ in range(repeats):
                    t0 = time.perf_counter()
                    runs.append(ev.evaluate(problem, EXAMPLES / example / "candidate_triton.py", **kwargs))
                    walls.append(time.perf_counter() - t0)
                summary = summarize(runs)
                stage_medians = {k: statistics.median(r.stages.get(k, 0.0) for r in runs) for k in runs[-1].stages}
                summary["wall_s_median"] = statistics.median(walls)
                summary["wall_s"] = walls  # each run's: its wall less its own stages, not medians less medians
                summary["stages_median_s"] = stage_medians
                entry[f"repeat_{label}"] = summary
                print(f"{example:8s} repeat {label}: {json.dumps(summary)}", flush=True)
            # While the pool's spare workers start (their CUDA contexts and profilers come up on the same GPU).
            entry["do_bench_pool_busy"] = do_bench_primary(example)
            report["examples"][example] = entry
    # The reference figure: do_bench on a quiet GPU, every worker gone.
    for example, entry in report["examples"].items():
        entry["do_bench"] = do_bench_primary(example)
        rep = entry.get("repeat_no_compile") or entry.get("repeat_with_compile")
        if rep is None:  # no repeats asked for: nothing to compare do_bench with
            continue
        for bench in (entry["do_bench"], entry["do_bench_pool_busy"]):
            bench["candidate_diff_pct"] = 100 * (rep["primary_candidate_ms_median"] / bench["candidate_ms"] - 1)
            bench["eager_diff_pct"] = 100 * (rep["primary_eager_ms_median"] / bench["eager_ms"] - 1)
        print(f"{example:8s} do_bench: {json.dumps(entry['do_bench'])}", flush=True)
        print(f"{example:8s} do_bench while spares start: {json.dumps(entry['do_bench_pool_busy'])}", flush=True)
    import torch

    from kernelevolve.platforms.peaks import peaks

    report["peaks"] = peaks(torch.device("cuda")).__dict__
    report["versions"] = r.versions
    report["device"] = r.device
    args.out.write_text(json.dumps(report, indent=1, default=str))

    print(
        "\n| example | speedup (mean of N) | CV % | graph speedup | CV % (graph) | harness ms | do_bench ms | diff % "
        "| wall s/eval | stages (median s) |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|")
    for name, e in report["examples"].items():
        for label in ("with_compile", "no_compile"):
            r = e.get(f"repeat_{label}")
            if r is None:  # that series was skipped (0 repeats)
                continue
            gs = f"{r['graph_speedup_mean']:.3f}" if r["graph_speedup_mean"] else "-"
            gcv = f"{r['graph_speedup_cv_pct']:.2f}" if r["graph_speedup_cv_pct"] is not None else "-"
            stages = ", ".join(f"{k} {v:.2f}" for k, v in r["stages_median_s"].items())
            print(
                f"| {name} ({label}) | {r['speedup_mean']:.3f} | {r['speedup_cv_pct']:.2f} | {gs} | {gcv} "
                f"| {r['primary_candidate_ms_median']:.4f} | {e['do_bench']['candidate_ms']:.4f} "
                f"| {e['do_bench']['candidate_diff_pct']:+.1f} | {r['wall_s_median']:.2f} | {stages} |"
            )
    print(f"peaks: {report['peaks']}")


if __name__ == "__main__":
    main()
