"""Where an evaluation's wall time goes beyond its stages: the parent's arrival time of each of the worker's events,
and the parent's own steps (the job sent, the trusted phase's cache copy, the kill, the next spare's start), for
docs/benchmarks/harness.md. The stages are the worker's own clocks; what lies between them (the job's parse, the
result's sending, the pipe's end, the kill) shows only here.

    python benchmarks/eval_timeline.py --target cuda --problem examples/rmsnorm/problem.py \
        --candidate examples/rmsnorm/candidate_triton.py --n 5 --out timeline.json

Prints, per evaluation, its wall, the wall less its stages (`unstaged`), and the steps between events that took
more than --show-ms (a step from a stage's start to the next other event includes that stage); the JSON holds
every event.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from kernelevolve.eval.evaluator import Evaluator, WorkerProcess  # noqa: E402
from kernelevolve.problem.problem import load_problem  # noqa: E402

OUTER = ("worker_start", "worker_wait")  # before the evaluation asked: not part of its wall


class Timeline:
    """The parent's steps, timed by wrapping WorkerProcess's and Evaluator's methods (this process only)."""

    def __init__(self) -> None:
        self.events: list[tuple[float, str]] = []

    def mark(self, what: str) -> None:
        self.events.append((time.monotonic(), what))

    def install(self) -> None:
        timeline = self
        next_event = WorkerProcess.next_event

        def on_event(worker: WorkerProcess, deadline: float) -> dict | None:
            event = next_event(worker, deadline)
            kind = "end of pipe" if event is None else str(event.get("event"))
            timeline.mark(f"{kind} {event.get('stage', '')}".strip() if event else kind)
            return event

        WorkerProcess.next_event = on_event  # type: ignore[method-assign]
        for cls, name in (
            (WorkerProcess, "send_job"),
            (WorkerProcess, "end_trusted_phase"),
            (WorkerProcess, "kill"),
            (Evaluator, "_top_up"),
        ):
            setattr(cls, name, self._bracketed(getattr(cls, name), name))

    def _bracketed(self, method: Any, name: str) -> Any:
        def wrapped(*args: Any, **kwargs: Any) -> Any:
            self.mark(f"{name} <")
            try:
                return method(*args, **kwargs)
            finally:
                self.mark(f"{name} >")

        return wrapped


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--target", default="cuda")
    ap.add_argument("--problem", type=Path, default=ROOT / "examples" / "rmsnorm" / "problem.py")
    ap.add_argument("--candidate", type=Path, default=ROOT / "examples" / "rmsnorm" / "candidate_triton.py")
    ap.add_argument("--n", type=int, default=5, help="evaluations timed, after one that warms the caches")
    ap.add_argument("--pause-s", type=float, default=2.0, help="wait before each, so that a spare is ready")
    ap.add_argument("--show-ms", type=float, default=3.0, help="print the steps between events longer than this")
    ap.add_argument("--out", type=Path, default=Path("timeline.json"))
    args = ap.parse_args()
    problem = load_problem(args.problem)
    timeline = Timeline()
    timeline.install()
    runs = []
    with Evaluator(args.target, timeout_s=600, prestart=True) as ev:
        ev.evaluate(problem, args.candidate, compile_baseline=False)  # the caches warm
        for i in range(args.n):
            time.sleep(args.pause_s)
            timeline.events.clear()
            timeline.mark("evaluate <")
            result = ev.evaluate(problem, args.candidate, compile_baseline=False)
            timeline.mark("evaluate >")
            t0 = timeline.events[0][0]
            wall = timeline.events[-1][0] - t0
            staged = sum(s for k, s in result.stages.items() if "." not in k and k not in OUTER)
            steps = [
                (round((b - a) * 1e3, 1), f"{what} -> {then}")
                for (a, what), (b, then) in zip(timeline.events, timeline.events[1:])
                if not (what.startswith("stage") and then.startswith("stage"))  # a stage's own time: in `stages`
            ]
            runs.append(
                {
                    "status": result.status.value,
                    "wall_s": wall,
                    "unstaged_s": wall - staged,
                    "stages": result.stages,
                    "events_ms": [(round((t - t0) * 1e3, 2), what) for t, what in timeline.events],
                    "steps_ms": steps,
                }
            )
            line = f"evaluation {i}: {result.status.value}, wall {wall:.3f} s, unstaged {wall - staged:.3f} s"
            print(line, flush=True)
            for ms, what in steps:
                if ms > args.show_ms:
                    print(f"    {ms:8.1f} ms  {what}", flush=True)
    args.out.write_text(json.dumps(runs, indent=1))
    print(
        f"median wall {statistics.median(r['wall_s'] for r in runs):.3f} s, "
        f"unstaged {statistics.median(r['unstaged_s'] for r in runs):.3f} s; wrote {args.out}"
    )


if __name__ == "__main__":
    main()
