"""Where host-bound code's time differs between two processes: per-CPU placement, or the process itself.

1. CPU sweep: one process pinned to each CPU in turn times (host clock, call + synchronize) merge_bucketized_dense
   case 3's reference, batch_event_truncate case 0's reference, and a pure-Python loop; two sweeps.
2. Judge/candidate pair: a parent forks a child before CUDA (as runner.start), both make contexts; they take turns
   timing the same references with the harness's Timer (the cross-check's quick config and the series' default),
   unpinned, recording the CPU each ran on.
Writes $OUT/hostbound.json and prints a table.
"""

import json
import multiprocessing
import os
import statistics
import sys
import time
import types
from pathlib import Path

import torch

ROOT = Path.cwd()
OUT = Path(os.environ.get("OUT", "/tmp/out"))


def load(name: str, case: dict) -> tuple[torch.nn.Module, list]:
    path = ROOT / "suites" / "ranking" / name / "problem.py"
    mod = types.ModuleType(name)
    exec(compile(path.read_text(), str(path), "exec"), mod.__dict__)
    mod.__dict__.update(case)
    torch.manual_seed(0)
    inputs = [t.cuda() for t in mod.get_inputs()]
    return mod.Model().cuda(), inputs


def cpu_now() -> int:
    return int(Path("/proc/self/stat").read_text().rsplit(")", 1)[1].split()[36])


def host_ms(fn, n: int) -> float:
    out = []
    for _ in range(n):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        fn()
        torch.cuda.synchronize()
        out.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(out)


def py_loop() -> None:
    s = 0
    for i in range(200_000):
        s += i * i


def py_ms(n: int = 5) -> float:
    out = []
    for _ in range(n):
        t0 = time.perf_counter()
        py_loop()
        out.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(out)


def setup():
    mbd, mbd_in = load("merge_bucketized_dense", {"BATCH": 4096, "FEATURES": 13, "BORDERS": 7})
    bet, bet_in = load("batch_event_truncate", {"FEATURES": 8, "BATCH": 512, "EVENTS": 200, "MAX_LEN": 200})
    with torch.no_grad():
        for _ in range(3):
            mbd(*mbd_in)
            bet(*bet_in)
    torch.cuda.synchronize()
    return (mbd, mbd_in), (bet, bet_in)


def sweep() -> list[dict]:
    (mbd, mbd_in), (bet, bet_in) = setup()
    rows = []
    cpus = sorted(os.sched_getaffinity(0))
    with torch.no_grad():
        for rnd in range(2):
            for c in cpus:
                os.sched_setaffinity(0, {c})
                time.sleep(0.01)
                rows.append(
                    {
                        "round": rnd,
                        "cpu": c,
                        "mbd_ms": host_ms(lambda: mbd(*mbd_in), 15),
                        "bet_ms": host_ms(lambda: bet(*bet_in), 7),
                        "py_ms": py_ms(),
                    }
                )
    os.sched_setaffinity(0, set(cpus))
    return rows


def timed(who: str) -> dict:
    from kernelevolve.eval.worker.timing import Timer, TimerConfig

    global _models
    if "_models" not in globals():
        _models = setup()
    (mbd, mbd_in), (bet, bet_in) = _models
    quick = Timer(torch.device("cuda"), TimerConfig(warmup_s=0.0, min_iters=10, max_iters=10))
    full = Timer(torch.device("cuda"), TimerConfig())
    row = {"who": who, "cpu_before": cpu_now()}
    with torch.no_grad():
        for name, (m, inp) in (("mbd", (mbd, mbd_in)), ("bet", (bet, bet_in))):
            fns = {"eager": lambda i, m=m: m(*i)}
            row[f"{name}_quick"] = quick.time_interleaved(fns, [inp])["eager"].median_ms
            row[f"{name}_full"] = full.time_interleaved(fns, [inp])["eager"].median_ms
            row[f"{name}_host"] = host_ms(lambda m=m, inp=inp: m(*inp), 10)
    row["py_ms"] = py_ms()
    row["cpu_after"] = cpu_now()
    return row


def child(conn) -> None:
    torch.cuda.init()
    torch.empty(1, device="cuda").zero_()
    while True:
        msg = conn.recv()
        if msg is None:
            return
        conn.send(timed("child"))


def main() -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    result: dict = {"cpus": sorted(os.sched_getaffinity(0)), "nproc": os.cpu_count()}
    parent_end, child_end = multiprocessing.Pipe()
    pid = os.fork()  # before CUDA here, as runner.start
    if pid == 0:
        parent_end.close()
        try:
            child(child_end)
        finally:
            os._exit(0)
    child_end.close()
    torch.empty(1, device="cuda").zero_()
    pairs = []
    for _ in range(6):
        pairs.append(timed("parent"))
        parent_end.send("go")
        pairs.append(parent_end.recv())
    parent_end.send(None)
    os.waitpid(pid, 0)
    result["pairs"] = pairs
    result["sweep"] = sweep()
    (OUT / "hostbound.json").write_text(json.dumps(result, indent=1))
    print("pairs (ms): who cpu mbd quick/full/host  bet quick/full/host  py")
    for r in pairs:
        print(
            f"  {r['who']:6} {r['cpu_before']:>2}->{r['cpu_after']:<2} "
            f"{r['mbd_quick']:.3f}/{r['mbd_full']:.3f}/{r['mbd_host']:.3f}  "
            f"{r['bet_quick']:.3f}/{r['bet_full']:.3f}/{r['bet_host']:.3f}  {r['py_ms']:.2f}"
        )
    print("sweep (ms, host clock): cpu round mbd bet py")
    for r in result["sweep"]:
        print(f"  {r['cpu']:>2} {r['round']} {r['mbd_ms']:.3f} {r['bet_ms']:.3f} {r['py_ms']:.2f}")
    sys.stdout.flush()


if __name__ == "__main__":
    main()
