"""Does a starting worker disturb the timing of another process on the same GPU?

The evaluator keeps spare workers started (CUDA context, Triton driver, profiler), and each evaluation
starts a new one, so on a GPU a spare's start overlaps the timing of the evaluations that follow. This
times the RMSNorm example's candidate and eager reference in short windows, with the harness's own timer
and with triton's do_bench, in four phases: quiet, while four workers start, with them idle, and after
they are killed. Output: JSON with every window, and a table of medians per phase.

    python benchmarks/spare_interference.py --out spare_interference.json
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from harness_gpu import primary_modules  # noqa: E402

from kernelevolve.eval.evaluator import WorkerProcess  # noqa: E402
from kernelevolve.eval.worker.timing import Timer, TimerConfig  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", type=Path, default=Path("spare_interference.json"))
    ap.add_argument("--example", default="rmsnorm")
    ap.add_argument("--workers", type=int, default=4)
    ap.add_argument("--busy-s", type=float, default=16.0, help="seconds of windows after the workers are spawned")
    args = ap.parse_args()

    import torch
    from triton.testing import do_bench

    new, ref, inputs = primary_modules(args.example)
    timer = Timer(torch.device("cuda"), TimerConfig(budget_s=0.15))
    fns = {"candidate": lambda xs: new(*xs), "eager": lambda xs: ref(*xs)}
    windows: list[dict] = []
    t_spawn = None

    def window(phase: str) -> None:
        with torch.no_grad():
            stats = timer.time_interleaved(fns, [inputs])
            db = do_bench(lambda: new(*inputs), warmup=10, rep=100, return_mode="median")
        t = time.monotonic()
        windows.append(
            {
                "phase": phase,
                "t_since_spawn_s": None if t_spawn is None else round(t - t_spawn, 3),
                "timer_candidate_ms": stats["candidate"].median_ms,
                "timer_eager_ms": stats["eager"].median_ms,
                "do_bench_candidate_ms": db,
            }
        )

    for _ in range(6):
        window("quiet")
    t_spawn = time.monotonic()
    workers = [WorkerProcess("cuda") for _ in range(args.workers)]
    while time.monotonic() - t_spawn < args.busy_s:
        window("starting")
    ready = []
    for w in workers:
        event = w.next_event(time.monotonic() + 60)
        ready.append(None if not event else round(float(event.get("t", 0)) - w.started, 2))
    for _ in range(6):
        window("idle workers")
    for w in workers:
        w.kill()
    for _ in range(6):
        window("after")

    phases: dict[str, dict] = {}
    for phase in ("quiet", "starting", "idle workers", "after"):
        rows = [w for w in windows if w["phase"] == phase]
        phases[phase] = {
            k: {"median": statistics.median(r[k] for r in rows), "max": max(r[k] for r in rows)}
            for k in ("timer_candidate_ms", "timer_eager_ms", "do_bench_candidate_ms")
        }
        phases[phase]["windows"] = len(rows)
    args.out.write_text(json.dumps({"workers_ready_s": ready, "phases": phases, "windows": windows}, indent=1))
    print(f"workers ready after (s): {ready}")
    print("| phase | windows | timer candidate ms (median / max) | timer eager ms | do_bench candidate ms |")
    print("|---|---|---|---|---|")
    for phase, p in phases.items():
        cells = " | ".join(
            f"{p[k]['median']:.4f} / {p[k]['max']:.4f}"
            for k in ("timer_candidate_ms", "timer_eager_ms", "do_bench_candidate_ms")
        )
        print(f"| {phase} | {p['windows']} | {cells} |")


if __name__ == "__main__":
    main()
