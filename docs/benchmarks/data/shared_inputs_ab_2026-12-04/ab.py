"""Why the cpu judge split read the RMSNorm reference slower (harness.md, "A judge split tried on the cpu target").

Two hypotheses, told apart in one process on the 1024 x 3000 case: (1) file-backed shared inputs (as the split's
eval/worker/shared.py made them, in /dev/shm) against anonymous ones; (2) a pause between timed calls, as the
split's per-call requests made, letting the OpenMP pool sleep: each call timed alone, back to back or after a
sleep. Interleaved rounds, medians in ms.

    python ab.py > ab.log
"""

import os
import statistics
import tempfile
import time

import torch

torch.manual_seed(0)
ROWS, HIDDEN = 1024, 3000
weight = torch.randn(HIDDEN)


def reference(x, r):
    z = x + r
    return z / torch.sqrt(z.pow(2).mean(dim=-1, keepdim=True) + 1e-6) * weight


def file_backed(t):
    fd, path = tempfile.mkstemp(dir=tempfile.mkdtemp(dir="/dev/shm"))
    os.ftruncate(fd, t.nbytes)
    os.close(fd)
    storage = torch.UntypedStorage.from_file(path, shared=True, nbytes=t.nbytes)
    out = torch.empty(0, dtype=t.dtype).set_(storage, 0, t.shape, t.stride())
    return out.copy_(t)


anonymous = [torch.randn(ROWS, HIDDEN), torch.randn(ROWS, HIDDEN)]
inputs = {"anonymous": anonymous, "file-backed": [file_backed(t) for t in anonymous]}
pauses = {"back to back": 0.0, "0.2 ms pause": 0.0002, "5 ms pause": 0.005, "50 ms pause": 0.05}
times: dict[str, list[float]] = {}
for _ in range(15):
    for name, xs in inputs.items():
        for label, pause in pauses.items():
            for _ in range(3):
                reference(*xs)
            for _ in range(10):
                if pause:
                    time.sleep(pause)
                t0 = time.perf_counter()
                reference(*xs)
                times.setdefault(f"{name}, {label}", []).append((time.perf_counter() - t0) * 1e3)
print(f"torch {torch.__version__}, {torch.get_num_threads()} threads, {os.cpu_count()} CPUs")
for key, v in times.items():
    q = statistics.quantiles(v, n=4)
    print(f"{key:32s} median {statistics.median(v):7.3f} ms  IQR {q[0]:.3f}-{q[2]:.3f}")
