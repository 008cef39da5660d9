"""The unseen-inputs check under a tight memory plan: the softmax example's Triton kernel evaluated with a tiny
device share (trials, held-back sets and their references on the host, one timing set), several times; each
evaluation's verdict and, per case, the timed median, the fastest call on held-back contents and the memory plan.

    python benchmarks/memory_plan_unseen.py --repeats 5
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path

from kernelevolve.eval.evaluator import Evaluator
from kernelevolve.eval.worker.memory import SHARE_VARIABLE
from kernelevolve.problem.problem import load_problem

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "softmax"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--share", default="0.0001", help="the harness's share of device memory")
    args = parser.parse_args()
    os.environ[SHARE_VARIABLE] = args.share  # the worker inherits it
    problem = load_problem(EXAMPLE / "problem.py")
    rows = []
    with Evaluator("cuda", timeout_s=300) as ev:
        for i in range(args.repeats):
            r = ev.evaluate(problem, EXAMPLE / "candidate_triton.py", compile_baseline=False)
            for c in r.cases:
                rows.append((i, r.status.value, c.shape, c.timing.candidate.median_ms, c.timing.candidate.unseen_ms))
            print(f"evaluation {i}: {r.status.value}; {r.memory}; {r.reason[:300]}", flush=True)
    print("| evaluation | verdict | case | timed median ms | fastest call on new contents ms |")
    print("|---|---|---|---|---|")
    for i, status, shape, timed, unseen in rows:
        fmt = lambda v: "-" if v is None else f"{v:.4f}"  # noqa: E731
        print(f"| {i} | {status} | {shape} | {fmt(timed)} | {fmt(unseen)} |")


if __name__ == "__main__":
    main()
