"""Every combination of some launch constants of one kernel, on one shape case: which configuration is fastest
there, and how far is it from a target time? For a case a target names (interformer_pffn's 256 rows), where the
tune search, ranking by the geometric mean over all cases, need not look.

Each configuration's output is compared with the reference (the problem's tolerance) before it is timed with the
harness's timer beside the eager reference. A hand measurement, not a verdict: a configuration found here goes
into the kernel's defaults or TUNABLES and is then measured by `kernelevolve eval` or `bench`.

    python benchmarks/case_sweep.py suites/ranking/interformer_pffn/candidate_splitk.py --case 4 \
        --grid BLOCK_M=16,32 --grid SPLIT_K=4,8,16 --out sweep.json
"""

from __future__ import annotations

import argparse
import itertools
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from case_setup import case_setups  # noqa: E402

from kernelevolve.eval.worker.timing import Timer, TimerConfig  # noqa: E402
from kernelevolve.problem.problem import tolerance  # noqa: E402


def _grid(specs: list[str]) -> dict[str, list[int]]:
    grid = {}
    for spec in specs:
        name, _, values = spec.partition("=")
        if not name or not values:
            raise SystemExit(f"--grid {spec!r}: expected NAME=V1,V2,...")
        grid[name] = [int(v) for v in values.split(",")]
    return grid


def _close(got, want, atol: float, rtol: float) -> bool:
    import torch

    got = got if isinstance(got, (tuple, list)) else [got]
    want = want if isinstance(want, (tuple, list)) else [want]
    return len(got) == len(want) and all(
        g.shape == w.shape and torch.allclose(g.float(), w.float(), atol=atol, rtol=rtol) for g, w in zip(got, want)
    )


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("kernel", type=Path)
    ap.add_argument("--case", type=int, required=True, help="index into the problem's SHAPE_CASES")
    ap.add_argument("--grid", action="append", default=[], help="NAME=V1,V2,... (repeatable)")
    ap.add_argument("--out", type=Path, default=Path("case_sweep.json"))
    ap.add_argument("--device", default="cuda", help="cuda; cpu only to try the script where no GPU is")
    args = ap.parse_args()
    grid = _grid(args.grid)

    import torch

    device = torch.device(args.device)
    setup = next(case_setups(args.kernel.absolute(), device, only=args.case))
    for name in grid:
        if not hasattr(setup.candidate, name):
            raise SystemExit(f"{args.kernel}: no launch constant {name}")
    dtype_name = str(setup.inputs[0].dtype).removeprefix("torch.")
    atol, rtol = tolerance(setup.problem, dtype_name)
    timer = Timer(device, TimerConfig(budget_s=0.3))
    defaults = {name: getattr(setup.candidate, name) for name in grid}
    rows = []
    with torch.no_grad():
        want = setup.reference(*setup.inputs)
        for values in itertools.product(*grid.values()):
            config = dict(zip(grid, values))
            for name, value in config.items():
                setattr(setup.candidate, name, value)
            row: dict = {"config": config}
            try:
                if not _close(setup.model(*setup.inputs), want, atol, rtol):
                    row["error"] = "wrong output"
                else:
                    stats = timer.time_interleaved(
                        {"kernel": lambda xs: setup.model(*xs), "eager": lambda xs: setup.reference(*xs)},
                        [setup.inputs],
                    )
                    row.update(kernel_ms=stats["kernel"].median_ms, eager_ms=stats["eager"].median_ms)
                    row["speedup"] = row["eager_ms"] / row["kernel_ms"]
            except Exception as e:  # noqa: BLE001 - a configuration that does not compile or launch is a row
                row["error"] = f"{type(e).__name__}: {str(e)[:160]}"
            rows.append(row)
            print(json.dumps(row), flush=True)
    for name, value in defaults.items():
        setattr(setup.candidate, name, value)
    timed = sorted((r for r in rows if "kernel_ms" in r), key=lambda r: r["kernel_ms"])
    args.out.write_text(json.dumps({"kernel": str(args.kernel), "case": setup.shape, "rows": rows}, indent=1))
    print(f"\n{args.kernel} at {setup.shape}: {len(timed)} of {len(rows)} configurations correct and timed")
    print("| rank | configuration | kernel us | eager us | speedup |")
    print("|---|---|---|---|---|")
    for i, r in enumerate(timed[:10], 1):
        cfg = ", ".join(f"{k} {v}" for k, v in r["config"].items())
        print(f"| {i} | {cfg} | {r['kernel_ms'] * 1e3:.1f} | {r['eager_ms'] * 1e3:.1f} | {r['speedup']:.2f}x |")


if __name__ == "__main__":
    main()
