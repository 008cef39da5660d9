"""In one process, no judge: wukong_fm's seed (and the eager reference) on case 2, per-call ms timed as
the timer times it (flush, spin, events around one call) against K calls back to back (plain, and in one CUDA
graph), on K distinct sets and on one set. Which of these reproduces the proof block's excess?"""

import importlib.util
import statistics
import sys

import torch

sys.path.insert(0, ".")
from kernelevolve.eval.worker.timing import Timer, TimerConfig, capture  # noqa: E402


def load(path, name):
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


dev = torch.device("cuda")
seed = load("suites/ranking/wukong_fm/seed_triton.py", "seed").ModelNew().to(dev)
ref = load("suites/ranking/wukong_fm/problem.py", "ref").Model().to(dev)
case = {"B": int(sys.argv[1]) if len(sys.argv) > 1 else 512, "N": 64, "D": 128, "K": 2304}
K = 9
torch.manual_seed(0)


def make():
    b, n, d, k = case["B"], case["N"], case["D"], case["K"]
    return [torch.randn(b, n, d, device=dev, dtype=torch.float16), torch.randn(b, n, k, device=dev, dtype=torch.float16)]


sets = [make() for _ in range(K)]
flush = torch.empty(256 * 1024 * 1024 // 4, dtype=torch.int32, device=dev)
ev = lambda: torch.cuda.Event(enable_timing=True)  # noqa: E731
rows = []


def per_call(name, fn):
    for _ in range(3):
        fn(sets[0])
    torch.cuda.synchronize()
    # A: the project's timer over 3 rotating sets
    t = Timer(dev, TimerConfig())
    st = t.time_interleaved({"f": fn}, sets[:3])["f"]
    a = st.median_ms
    # A9: the timer over all 9 sets
    st9 = Timer(dev, TimerConfig()).time_interleaved({"f": fn}, sets)["f"].median_ms
    res = {"timer3": a, "timer9": st9}
    # B: back to back plain, distinct sets, events around K
    for label, inputs in (("b2b_distinct", sets), ("b2b_same", [sets[0]] * K)):
        xs = []
        for _ in range(10):
            flush.zero_()
            torch.cuda._sleep(2_000_000)
            s, e = ev(), ev()
            s.record()
            for inp in inputs:
                fn(inp)
            e.record()
            torch.cuda.synchronize()
            xs.append(s.elapsed_time(e) / K)
        res[label] = statistics.median(xs)
    # C: graph of K calls
    for label, inputs in (("graph_distinct", sets), ("graph_same", [sets[0]] * K)):
        with torch.no_grad():
            g, outs = capture(lambda inputs=inputs: [fn(i) for i in inputs], dev, warm_ups=1)
        xs = []
        for _ in range(10):
            flush.zero_()
            torch.cuda._sleep(2_000_000)
            s, e = ev(), ev()
            s.record()
            g.replay()
            e.record()
            torch.cuda.synchronize()
            xs.append(s.elapsed_time(e) / K)
        res[label] = statistics.median(xs)
        # without the spin before (the device idle, as after an IPC request)
        xs = []
        for _ in range(10):
            flush.zero_()
            torch.cuda.synchronize()
            s, e = ev(), ev()
            s.record()
            g.replay()
            e.record()
            torch.cuda.synchronize()
            xs.append(s.elapsed_time(e) / K)
        res[label + "_nospin"] = statistics.median(xs)
        del g, outs
    # D: each call flushed and spun, distinct sets, events per call (timer-like, 9 sets)
    xs = []
    for r in range(3):
        for inp in sets:
            flush.zero_()
            torch.cuda._sleep(200_000)
            s, e = ev(), ev()
            s.record()
            fn(inp)
            e.record()
            torch.cuda.synchronize()
            xs.append(s.elapsed_time(e))
    res["isolated9"] = statistics.median(xs)
    rows.append((name, res))


with torch.no_grad():
    per_call("seed", lambda s: seed(*s))
    per_call("eager", lambda s: ref(*s))
    copy_out = torch.empty_like(sets[0][1])
    per_call("copy_y", lambda s: copy_out.copy_(s[1]))
    per_call("clone_y", lambda s: s[1].clone())

print("case", case, "K", K, torch.cuda.get_device_name())
keys = list(rows[0][1])
print(f"{'fn':8}" + "".join(f"{k:>22}" for k in keys))
for name, res in rows:
    print(f"{name:8}" + "".join(f"{res[k]:22.4f}" for k in keys))
