"""The judge's proof block on a GPU (eval/worker/proof.py), case by case: evaluates a few honest candidates with
the candidate in a process of its own and prints each verdict, the timing stage's parts and the block's line from
the worker's log (its calls, the judge's clock, what is subtracted for the request and the read, the report).

    KERNELEVOLVE_GPU_JUDGE=split python3 benchmarks/gpu_block_probe.py
"""

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from kernelevolve.eval.evaluator import Evaluator  # noqa: E402
from kernelevolve.problem.problem import load_problem  # noqa: E402
from tests.adversarial.test_adversarial import FAST_TIMING, HERE, RELU, SCALE_SHIFT  # noqa: E402

RUNS = [
    (RELU, HERE / "honest" / "relu_triton.py"),
    (RELU, HERE / "honest" / "relu_where.py"),
    (SCALE_SHIFT, HERE / "honest" / "scale_shift_triton.py"),
    (HERE / "problems" / "relu_large.py", HERE / "honest" / "relu_where.py"),
    (ROOT / "examples" / "rmsnorm" / "problem.py", ROOT / "examples" / "rmsnorm" / "candidate_triton.py"),
]


def main() -> None:
    with Evaluator("cuda", timeout_s=300, prestart=True) as ev:
        for problem, cand in RUNS:
            r = ev.evaluate(load_problem(problem), cand, require_kernel=False, compile_baseline=False, **FAST_TIMING)
            parts = {k: round(v, 3) for k, v in r.stages.items() if k.startswith("timing")}
            print(problem.stem, cand.name, r.status.value, r.reason[:300], parts)
            for line in r.log_tail.splitlines():
                if "unseen-inputs block" in line:
                    print("   ", line.split("] ", 1)[1])
            sys.stdout.flush()


if __name__ == "__main__":
    main()
