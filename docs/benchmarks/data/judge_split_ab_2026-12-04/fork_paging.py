"""Does a forked child page the 4096 x 4096 RMSNorm reference slower than its parent? Both with the worker's fixed
heap thresholds; each times 30 calls back to back (medians, max) in turn, three rounds."""
import os, statistics, sys, time
sys.path.insert(0, "/tmp/split")
from kernelevolve.eval.worker import allocator
allocator.fix_thresholds()
import torch

def ref(x, w):
    v = x.pow(2).mean(-1, keepdim=True)
    return x * torch.rsqrt(v + 1e-6) * w

def bench(tag):
    x = torch.randn(4096, 4096); w = torch.randn(4096)
    ts = []
    for _ in range(30):
        t0 = time.perf_counter(); ref(x, w); ts.append((time.perf_counter() - t0) * 1e3)
    print(f"{tag}: median {statistics.median(ts):.1f} ms, max {max(ts):.1f} ms, min {min(ts):.1f}", flush=True)

r, wfd = os.pipe()
pid = os.fork()
if pid == 0:
    os.close(wfd)
    for i in range(3):
        os.read(r, 1); bench(f"child  round {i}")
        os._exit(0) if i == 2 else None
for i in range(3):
    bench(f"parent round {i}")
    os.write(wfd, b"x"); time.sleep(0.1)
    # wait for the child's round: crude, the child prints when done
    time.sleep(4)
os.waitpid(pid, 0)
