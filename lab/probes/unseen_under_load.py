"""The unseen-inputs check on a busy cpu: the content-cache exploit and the honest CPU kernels of the adversarial
suite, each evaluated several times on the `cpu` target while other sessions keep every core busy (matmul loops
started with setsid, so Linux's autogroup treats them as other users' work, as CI's second pytest worker is).

    python benchmarks/unseen_under_load.py [--repeats 4] [--load 2]   # per candidate: how often each status came
"""

from __future__ import annotations

import argparse
import collections
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from kernelevolve.eval.evaluator import Evaluator  # noqa: E402
from kernelevolve.problem.problem import load_problem  # noqa: E402

ADV, FIX = ROOT / "tests" / "adversarial", ROOT / "tests" / "fixtures"
CANDIDATES = [
    ("exploits/cache_by_content.py", ADV / "problems" / "relu_medium.py", "rejected"),
    ("honest/relu_where.py", FIX / "kb_relu.py", "ok"),
    ("honest/relu_out_buffer.py", FIX / "kb_relu.py", "ok"),
    ("honest/relu_inplace_copy.py", FIX / "kb_relu.py", "ok"),
    ("honest/relu_cpp.py", FIX / "kb_relu.py", "ok"),
    ("honest/softmax_manual.py", ADV / "problems" / "softmax_small.py", "ok"),
    ("honest/softmax_cpp.py", ADV / "problems" / "softmax_small.py", "ok"),
    ("honest/bucketize_count.py", FIX / "bucketize_loop.py", "ok"),
    ("honest/scale_shift_addcmul.py", FIX / "scale_shift.py", "ok"),
]
LOAD = "import torch\ntorch.set_num_threads({t})\na = torch.randn(1500, 1500)\nwhile True:\n    a @ a\n"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=4)
    ap.add_argument("--load", type=int, default=2, help="busy sessions (0: an idle host)")
    args = ap.parse_args()
    cores = os.cpu_count() or 1
    loads = [
        subprocess.Popen([sys.executable, "-c", LOAD.format(t=cores)], start_new_session=True) for _ in range(args.load)
    ]
    tally: dict[str, collections.Counter] = collections.defaultdict(collections.Counter)
    try:
        with Evaluator("cpu", timeout_s=120, prestart=True, memory_limit=4 * 2**30) as ev:
            for rep in range(args.repeats):
                for cand, problem, _ in CANDIDATES:
                    r = ev.evaluate(load_problem(problem), ADV / cand, budget_s=0.05, max_iters=20)
                    tally[cand][r.status.value] += 1
                    print(f"[{rep + 1}/{args.repeats}] {cand}: {r.status.value} {r.reason[:120]}", flush=True)
    finally:
        for p in loads:
            p.kill()
            p.wait()
    print(f"\n{args.load} busy sessions of {cores} threads on {cores} cores, {args.repeats} evaluations each")
    print(f"{'candidate':34} {'expected':9} statuses")
    for cand, _, expected in CANDIDATES:
        print(f"{cand:34} {expected:9} {dict(tally[cand])}")


if __name__ == "__main__":
    main()
