"""The judge's proof block on a GPU (eval/worker/proof.py), case by case: evaluates honest candidates with the
candidate in a process of its own and prints each verdict, the timing stage's parts, each case's reported,
host-clock and unseen-inputs times, and the block's lines from the worker's log (its calls, the judge's clock,
what is subtracted for the request and the read, the report).

    python3 benchmarks/gpu_block_probe.py                      # five small honest kernels (tests/adversarial)
    python3 benchmarks/gpu_block_probe.py --seeds wukong_fm,mapid   # ranking-suite seeds, with their defaults
"""

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from kernelevolve.eval.evaluator import Evaluator  # noqa: E402
from kernelevolve.problem.problem import load_problem  # noqa: E402
from tests.adversarial.test_adversarial import FAST_TIMING, HERE, RELU, SCALE_SHIFT  # noqa: E402

SMALL = [
    (RELU, HERE / "honest" / "relu_triton.py"),
    (RELU, HERE / "honest" / "relu_where.py"),
    (SCALE_SHIFT, HERE / "honest" / "scale_shift_triton.py"),
    (HERE / "problems" / "relu_large.py", HERE / "honest" / "relu_where.py"),
    (ROOT / "examples" / "rmsnorm" / "problem.py", ROOT / "examples" / "rmsnorm" / "candidate_triton.py"),
]
SUITE = ROOT / "suites" / "ranking"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seeds", default="", help="comma-separated ranking-suite problems: their seed_triton.py")
    args = ap.parse_args()
    if args.seeds:  # as `bench` evaluates them: the defaults (kernel policy, torch.compile baseline, trials)
        runs = [(SUITE / name / "problem.py", SUITE / name / "seed_triton.py", {}) for name in args.seeds.split(",")]
    else:
        options = dict(require_kernel=False, compile_baseline=False, **FAST_TIMING)
        runs = [(problem, cand, options) for problem, cand in SMALL]
    with Evaluator("cuda", timeout_s=300, prestart=True) as ev:
        for problem, cand, options in runs:
            t0 = time.time()
            r = ev.evaluate(load_problem(problem), cand, **options)
            parts = {k: round(v, 3) for k, v in r.stages.items() if k.startswith("timing")}
            name = problem.parent.name if problem.name == "problem.py" else problem.stem
            print(f"== {name} {cand.name} {r.status.value} {time.time() - t0:.0f}s {r.reason[:300]}", parts)
            for c in r.cases:
                print("   case", c.shape, c.t_candidate_ms, c.t_candidate_host_ms, c.t_candidate_unseen_ms)
            for line in r.log_tail.splitlines():
                if "unseen-inputs block" in line:
                    print("   ", line.split("] ", 1)[1])
            sys.stdout.flush()


if __name__ == "__main__":
    main()
