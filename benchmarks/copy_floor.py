"""How close can a memory-bound kernel get at its size? A device copy of the same bytes, timed beside it.

The roofline floor moves every byte once at the peak bandwidth (the larger of measured and datasheet). At tens
of microseconds a kernel also pays its launch, ramp-up and tail, and so does a plain copy. For each shape case
this times, with the harness's timer (interleaved, L2 flushed, median), the kernel, the eager reference, and
`dst.copy_(src)` moving the case's minimum bytes (inputs and outputs, each once: half read, half written).
It reports each one's bandwidth as a share of the measured copy bandwidth of 1 GiB (`platforms.peaks`), the
"measured HBM bandwidth" of the 80%-of-HBM rule.

    python benchmarks/copy_floor.py --out copy_floor.json \
        suites/ranking/rmsnorm2d_fwd/seed_triton.py suites/ranking/rmsnorm2d_bwd/candidate_persistent.py
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from case_setup import ROOT, case_setups  # noqa: E402

from kernelevolve.eval.worker.speed import tensor_bytes  # noqa: E402
from kernelevolve.eval.worker.timing import Timer  # noqa: E402


def measure_kernel(kernel: Path, timer, device, bandwidth_gbs: float) -> list[dict]:
    import torch

    rows = []
    for setup in case_setups(kernel, device):
        new, ref, inputs, shape = setup.model, setup.reference, setup.inputs, setup.shape
        with torch.no_grad():
            nbytes = tensor_bytes(inputs, ref(*inputs))
            src = torch.empty(nbytes // 8, dtype=torch.float32, device=device).uniform_()
            dst = torch.empty_like(src)
            fns = {
                "kernel": lambda xs, m=new: m(*xs),
                "eager": lambda xs, m=ref: m(*xs),
                "copy": lambda xs, a=dst, b=src: a.copy_(b),
            }
            stats = timer.time_interleaved(fns, [inputs])
        row = {"file": str(kernel.relative_to(ROOT)), "shape": shape, "min_bytes": nbytes}
        for name, st in stats.items():
            gbs = nbytes / (st.median_ms * 1e-3) / 1e9
            row[name] = {
                "ms": st.median_ms,
                "iqr_ms": st.iqr_ms,
                "gbs": gbs,
                "of_measured_pct": 100 * gbs / bandwidth_gbs,
            }
        rows.append(row)
        if device.type == "cuda":
            torch.cuda.empty_cache()
    return rows


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("kernels", nargs="+", type=Path, help="kernel files beside their problem.py")
    ap.add_argument("--out", type=Path, default=Path("copy_floor.json"))
    ap.add_argument("--device", default="cuda", help="cuda; cpu only to try the script where no GPU is")
    args = ap.parse_args()

    import torch

    from kernelevolve.platforms.peaks import peaks

    device = torch.device(args.device)
    pk = peaks(device)
    timer = Timer(device)
    rows = [row for k in args.kernels for row in measure_kernel(k.absolute(), timer, device, pk.bandwidth_gbs)]
    args.out.write_text(json.dumps({"peaks": pk.__dict__, "rows": rows}, indent=1, default=str))
    print(f"measured copy bandwidth (1 GiB): {pk.bandwidth_gbs:.0f} GB/s")
    print("| kernel | case | MB | kernel us (% of measured BW) | copy of the same bytes us (%) | kernel / copy |")
    print("|---|---|---|---|---|---|")
    for r in rows:
        k, c = r["file"], r["copy"]
        print(
            f"| {Path(k).parent.name}/{Path(k).name} | {r['shape']} | {r['min_bytes'] / 1e6:.1f} "
            f"| {r['kernel']['ms'] * 1e3:.1f} ({r['kernel']['of_measured_pct']:.0f}%) "
            f"| {c['ms'] * 1e3:.1f} ({c['of_measured_pct']:.0f}%) | {r['kernel']['ms'] / c['ms']:.2f} |"
        )


if __name__ == "__main__":
    main()
