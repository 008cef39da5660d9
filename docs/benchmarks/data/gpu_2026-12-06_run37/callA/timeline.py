"""Where an evaluation's wall goes beyond its stages: parent-side arrival times of the worker's events.

    python .gpu/s39/timeline.py --target cuda --example rmsnorm --n 5 --out timeline.json
"""
from __future__ import annotations

import argparse, json, statistics, sys, time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from kernelevolve.eval import evaluator as ev_mod  # noqa: E402
from kernelevolve.eval.evaluator import Evaluator, WorkerProcess  # noqa: E402
from kernelevolve.problem.problem import load_problem  # noqa: E402

LOG: list[tuple[float, str]] = []
_next, _send, _kill, _trusted, _top = (WorkerProcess.next_event, WorkerProcess.send_job, WorkerProcess.kill,
                                       WorkerProcess.end_trusted_phase, Evaluator._top_up)


def next_event(self, deadline):
    e = _next(self, deadline)
    kind = "eof" if e is None else e.get("event")
    LOG.append((time.monotonic(), f"{kind}:{e.get('stage', '') if e else ''}"))
    return e


def send_job(self, job):
    LOG.append((time.monotonic(), "send_job"))
    return _send(self, job)


def kill(self, keep_events=False):
    LOG.append((time.monotonic(), "kill<"))
    r = _kill(self, keep_events)
    LOG.append((time.monotonic(), "kill>"))
    return r


def end_trusted(self):
    LOG.append((time.monotonic(), "share<"))
    r = _trusted(self)
    LOG.append((time.monotonic(), "share>"))
    return r


def top_up(self):
    LOG.append((time.monotonic(), "topup<"))
    r = _top(self)
    LOG.append((time.monotonic(), "topup>"))
    return r


WorkerProcess.next_event, WorkerProcess.send_job, WorkerProcess.kill = next_event, send_job, kill
WorkerProcess.end_trusted_phase, Evaluator._top_up = end_trusted, top_up


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--target", default="cuda")
    ap.add_argument("--example", default="rmsnorm")
    ap.add_argument("--candidate", default="candidate_triton.py")
    ap.add_argument("--n", type=int, default=5)
    ap.add_argument("--out", type=Path, default=Path("timeline.json"))
    a = ap.parse_args()
    problem = load_problem(ROOT / "examples" / a.example / "problem.py")
    cand = ROOT / "examples" / a.example / a.candidate
    runs = []
    with Evaluator(a.target, timeout_s=600, prestart=True) as ev:
        ev.evaluate(problem, cand, compile_baseline=False)  # warm caches
        for i in range(a.n):
            time.sleep(2.0)  # spares ready
            LOG.clear()
            t0 = time.monotonic()
            LOG.append((t0, "evaluate<"))
            r = ev.evaluate(problem, cand, compile_baseline=False)
            t1 = time.monotonic()
            LOG.append((t1, "evaluate>"))
            top = {k: v for k, v in r.stages.items() if "." not in k}
            events = [(round((t - t0) * 1e3, 1), what) for t, what in LOG]
            gaps = sorted(((round((b[0] - a_[0]) * 1e3, 1), f"{a_[1]} -> {b[1]}") for a_, b in zip(LOG, LOG[1:])),
                          reverse=True)[:8]
            runs.append({"status": r.status.value, "wall": t1 - t0, "stages": r.stages,
                         "sum_top": sum(v for k, v in top.items() if k not in ("worker_start", "worker_wait")),
                         "events": events, "gaps": gaps, "speedup": r.speedup})
            print(f"eval {i}: {r.status.value} wall {t1 - t0:.3f} s, compile {r.stages.get('compile', 0):.3f}, "
                  f"sum of top stages {runs[-1]['sum_top']:.3f}, worker_exit {r.stages.get('worker_exit')}", flush=True)
            for g in gaps[:6]:
                print("   ", g, flush=True)
    a.out.write_text(json.dumps(runs, indent=1))
    walls = [r["wall"] - r["stages"].get("compile", 0) for r in runs]
    print(f"median wall less compile: {statistics.median(walls):.3f} s; "
          f"median gap wall-sum: {statistics.median(r['wall'] - r['sum_top'] for r in runs):.3f} s")


if __name__ == "__main__":
    main()
