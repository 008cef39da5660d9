"""A worker's start, exec'd (`KERNELEVOLVE_ZYGOTE=off`) against forked by the zygote (eval/launch/zygote.py): wall
and CPU
seconds from the evaluator's request (`WorkerProcess`) to the worker's `ready` event, on the cpu target.

CPU counts every process that works for the start: this one (the request, the private folder, the cgroup), the
worker's process tree at `ready` (the exec'd path's `unshare` and the worker, which was `confine` before its exec;
the forked path's first process and the worker; the candidate's process forked by the worker), and the zygote's
own share (the fork). The zygote's one start per process (its imports) is reported apart.

    python benchmarks/worker_start.py [--starts 10] [--target cpu]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time

from kernelevolve.eval.evaluator import WorkerProcess
from kernelevolve.eval.launch import spawn, zygote


def cpu_s(pid: int) -> float:
    """Seconds one process (all its threads) has run on a CPU, from the scheduler's own count in nanoseconds
    (0 once it is gone)."""
    total = 0
    try:
        for task in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{task}/schedstat") as f:
                total += int(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        pass
    return total / 1e9


def zygote_pids() -> list[int]:
    return [z.proc.pid for z in zygote._zygotes.values() if z.alive()]


def start(target: str, mode: str) -> dict[str, float]:
    os.environ[zygote.OFF_ENV] = mode
    zygotes_before = {pid: cpu_s(pid) for pid in zygote_pids()}
    own = time.process_time()
    worker = WorkerProcess(target)
    try:
        event = worker.next_event(time.monotonic() + 300)
        if not event or event.get("event") != "ready":
            raise RuntimeError(f"the worker did not start: {event}\n{worker.log_tail()}")
        wall = float(event["t"]) - worker.started
        cpu = sum(cpu_s(pid) for pid in spawn.process_tree(worker.proc.pid)) + time.process_time() - own
        zygote_cpu = sum(cpu_s(pid) - zygotes_before.get(pid, 0.0) for pid in zygote_pids())
        return {"wall_s": wall, "cpu_s": cpu + zygote_cpu, "zygote_cpu_s": zygote_cpu}
    finally:
        worker.kill()
        worker.close_events()


def summary(runs: list[dict[str, float]]) -> dict[str, float]:
    return {
        f"{key}_{stat}": round(fn([r[key] for r in runs]), 4)
        for key in ("wall_s", "cpu_s")
        for stat, fn in (("median", statistics.median), ("mean", statistics.fmean))
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--starts", type=int, default=10, help="measured starts per path (after one warm-up each)")
    parser.add_argument("--target", default="cpu")
    args = parser.parse_args()
    start(args.target, "off")  # the sandbox's probe and the page cache, paid before anything is measured
    first = start(args.target, "on")  # the zygote's own start: its imports
    runs: dict[str, list[dict[str, float]]] = {"off": [], "on": []}
    for _ in range(args.starts):  # interleaved, so that a busy moment of the machine falls on both
        for mode in ("off", "on"):
            runs[mode].append(start(args.target, mode))
    print(
        json.dumps(
            {
                "exec": summary(runs["off"]),
                "zygote": summary(runs["on"]),
                "zygote_first_start": {k: round(v, 4) for k, v in first.items()},
                "starts": args.starts,
                "cpus": os.cpu_count(),
            },
            indent=2,
        )
    )


if __name__ == "__main__":
    main()
