"""The judge's proof block on a GPU (eval/worker/proof.py), case by case: evaluates honest candidates with the
candidate in a process of its own and prints each verdict, the timing stage's parts, each case's reported,
host-clock and unseen-inputs times, and the block's lines from the worker's log (its calls, the judge's clock,
what is subtracted for the request and the read, the report).

    python3 benchmarks/gpu_block_probe.py                      # five small honest kernels (tests/adversarial)
    python3 benchmarks/gpu_block_probe.py --seeds wukong_fm,mapid   # ranking-suite seeds, with their defaults
    python3 benchmarks/gpu_block_probe.py --seeds batch_event_truncate --repeat 3 --spares 0

Each case's line ends with the speedup's baseline over the judge's median of the reference (at most 1: the
baseline is the lower of the two processes' medians; `review` names a case whose medians were 1.5x apart), and
each evaluation says which CPUs its processes may run on and were seen running on.
"""

import argparse
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
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
    ap.add_argument("--repeat", type=int, default=1, help="evaluations of each candidate")
    ap.add_argument("--spares", type=int, default=4, help="spare workers kept started beside the evaluations")
    args = ap.parse_args()
    if args.seeds:  # as `bench` evaluates them: the defaults (kernel policy, torch.compile baseline, trials)
        runs = [(SUITE / name / "problem.py", SUITE / name / "seed_triton.py", {}) for name in args.seeds.split(",")]
    else:
        options = dict(require_kernel=False, compile_baseline=False, **FAST_TIMING)
        runs = [(problem, cand, options) for problem, cand in SMALL]
    with Evaluator("cuda", timeout_s=300, prestart=args.spares) as ev:
        for problem, cand, options in [run for run in runs for _ in range(args.repeat)]:
            t0 = time.time()
            watch = CpuWatch(ev)
            r = ev.evaluate(load_problem(problem), cand, **options)
            parts = {k: round(v, 3) for k, v in r.stages.items() if k.startswith(("timing", "compile"))}
            name = problem.parent.name if problem.name == "problem.py" else problem.stem
            print(f"== {name} {cand.name} {r.status.value} {time.time() - t0:.0f}s {r.reason[:300]}", parts)
            print("   CPUs allowed:", watch.found or "not seen")
            print("   CPUs seen running on:", {name: sorted(cpus) for name, cpus in watch.ran.items()})
            for c in r.cases:
                t = c.timing
                ratio = (
                    round(t.eager.median_ms / t.eager.judge_ms, 3) if t.eager.median_ms and t.eager.judge_ms else None
                )
                print("   case", c.shape, t.candidate.median_ms, t.candidate.host_ms, t.candidate.unseen_ms, ratio)
            for note in r.review:
                print("   review:", note[:300])
            for line in r.log_tail.splitlines():
                if "unseen-inputs block" in line:
                    print("   ", line.split("] ", 1)[1])
            sys.stdout.flush()
            watch.stop()


class CpuWatch:
    """Reads, while an evaluation runs, the CPUs each process under the evaluator's workers may run on (the
    judge's and the candidate's), and those it was seen running on, from /proc: a sandbox that pins them shows
    here."""

    def __init__(self, ev: Evaluator) -> None:
        self.found: dict[str, str] = {}
        self.ran: dict[str, set[int]] = {}  # the CPUs each was seen on, sampled
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._look, args=(ev,), daemon=True)
        self._thread.start()

    def _look(self, ev: Evaluator) -> None:
        while not self._done.wait(0.5):
            for worker in list(ev._busy):
                for pid in [worker.proc.pid, *_children(worker.proc.pid)]:
                    try:
                        status = Path(f"/proc/{pid}/status").read_text()
                    except OSError:
                        continue
                    fields = dict(line.split(":\t", 1) for line in status.splitlines() if ":\t" in line)
                    name = f"{fields.get('Name', '?')}[{pid}]"
                    self.found[name] = fields.get("Cpus_allowed_list", "?")
                    try:  # field 39 of stat: the CPU it last ran on
                        cpu = int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[36])
                    except (OSError, ValueError, IndexError):
                        continue
                    self.ran.setdefault(name, set()).add(cpu)

    def stop(self) -> None:
        self._done.set()
        self._thread.join()


def _children(pid: int) -> list[int]:
    found = []
    for task in Path(f"/proc/{pid}/task").glob("*"):
        try:
            found += [int(p) for p in (task / "children").read_text().split()]
        except OSError:
            continue
    return found + [c for child in found for c in _children(child)]


if __name__ == "__main__":
    main()
