"""What the torch.profiler (CUPTI) costs in a fresh CUDA process, and whether a profiled process launches slower.

The harness's kernel-launch check profiles one forward call after timing, and that step was the largest of an
evaluation (docs/benchmarks/harness.md). This script times, each in a fresh process: the first and second profiler
sessions, the first session after a torch.compile call, and the launch cost (host time per launch, and CUDA-event
time of a short kernel) before and after a profiler session, to decide whether the profiler can be started before
timing.

    python benchmarks/profiler_cost.py --out profiler_cost.json
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

SCENARIO = r"""
import json, statistics, sys, time
import torch
scenario = sys.argv[1]
torch.cuda.set_device(0)
x = torch.zeros(1024, device="cuda")
torch.cuda.synchronize()
out = {}

def launches(n=5000):
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(n):
        x.add_(1.0)
    t1 = time.perf_counter()
    torch.cuda.synchronize()
    return 1e6 * (t1 - t0) / n  # host microseconds per launch

def event_us(n=200):
    times = []
    for _ in range(n):
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record(); x.add_(1.0); e.record(); e.synchronize()
        times.append(1000 * s.elapsed_time(e))
    return statistics.median(times)

def profile_once():
    from torch.profiler import ProfilerActivity, profile
    t0 = time.perf_counter()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        x.add_(1.0)
        torch.cuda.synchronize()
    names = [e.name for e in prof.events() if e.device_type.name == "CUDA"]
    return time.perf_counter() - t0, len(names)

launches(); event_us()
if scenario == "compile_first":
    t0 = time.perf_counter()
    f = torch.compile(lambda t: (t * 2).sin())
    f(x); torch.cuda.synchronize()
    out["compile_s"] = time.perf_counter() - t0
out["launch_us_before"] = statistics.median(launches() for _ in range(3))
out["event_us_before"] = event_us()
t0 = time.perf_counter(); import torch.profiler; out["import_profiler_s"] = time.perf_counter() - t0
out["first_profile_s"], out["first_events"] = profile_once()
out["second_profile_s"], out["second_events"] = profile_once()
out["launch_us_after"] = statistics.median(launches() for _ in range(3))
out["event_us_after"] = event_us()
print(json.dumps(out))
"""

IDLE = "import torch, time; torch.cuda.set_device(0); torch.zeros(1, device='cuda'); time.sleep(60)"


def run(scenario: str) -> dict:
    p = subprocess.run([sys.executable, "-c", SCENARIO, scenario], capture_output=True, text=True, timeout=300)
    if p.returncode != 0:
        return {"error": p.stderr[-2000:]}
    return json.loads(p.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", type=Path, default=Path("profiler_cost.json"))
    ap.add_argument("--repeats", type=int, default=2, help="fresh processes for the plain scenario")
    args = ap.parse_args()
    report: dict = {}

    def record(name: str, row: dict) -> None:  # written as it comes: a time bound keeps what finished
        report.setdefault(name, []).append(row)
        args.out.write_text(json.dumps(report, indent=1))
        print(name, json.dumps(row), flush=True)

    for scenario in ("plain", "compile_first"):
        for _ in range(args.repeats if scenario == "plain" else 1):
            record(scenario, run(scenario))
    # Four idle processes holding CUDA contexts on the same GPU, as the evaluator's spare workers do.
    idle = [subprocess.Popen([sys.executable, "-c", IDLE]) for _ in range(4)]
    try:
        import time

        time.sleep(8)
        record("with_4_idle_contexts", run("plain"))
    finally:
        for p in idle:
            p.kill()
    keys = [
        "first_profile_s",
        "second_profile_s",
        "launch_us_before",
        "launch_us_after",
        "event_us_before",
        "event_us_after",
    ]
    print("| scenario | " + " | ".join(keys) + " |")
    for name, rows in report.items():
        for r in rows:
            cells = " | ".join(f"{r.get(k, float('nan')):.3f}" for k in keys)
            print(f"| {name} | {cells} | {r.get('error', '')[-200:]}")


if __name__ == "__main__":
    main()
