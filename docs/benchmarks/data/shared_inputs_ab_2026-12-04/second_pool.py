"""The third suspect of the cpu judge split: a second OpenMP pool. The C++ candidate links the system's libgomp,
torch its bundled one; in the split the reference was timed in the candidate's process, after the candidate's
calls. Here, in one process, the 1024 x 3000 reference timed alone, and right after calls of the C++ RMSNorm
candidate (examples/rmsnorm/candidate_cpp.py), interleaved rounds, medians in ms.

    python second_pool.py > second_pool.log
"""

import importlib.util
import os
import statistics
import sys
import time
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[4]
spec = importlib.util.spec_from_file_location("candidate_cpp", ROOT / "examples/rmsnorm/candidate_cpp.py")
candidate_module = importlib.util.module_from_spec(spec)
spec.loader.exec_module(candidate_module)
sys.path.insert(0, str(ROOT / "examples/rmsnorm"))
import problem  # noqa: E402

torch.manual_seed(0)
problem.ROWS, problem.HIDDEN = 1024, 3000
reference = problem.Model(3000)
candidate = candidate_module.ModelNew(3000)
candidate.load_state_dict(reference.state_dict())
xs = problem.get_inputs()
times: dict[str, list[float]] = {}


def timed(key, fn, n=10):
    for _ in range(n):
        t0 = time.perf_counter()
        fn(*xs)
        times.setdefault(key, []).append((time.perf_counter() - t0) * 1e3)


with torch.no_grad():
    for _ in range(15):
        for _ in range(3):
            reference(*xs)
        timed("reference alone", reference)
        for _ in range(10):
            candidate(*xs)
        timed("reference right after the candidate", reference)
        for _ in range(10):
            candidate(*xs)
        time.sleep(0.3)
        timed("reference 0.3 s after the candidate", reference)
        timed("candidate", candidate)
print(f"torch {torch.__version__}, {torch.get_num_threads()} threads, {os.cpu_count()} CPUs")
for key, v in times.items():
    q = statistics.quantiles(v, n=4)
    print(f"{key:38s} median {statistics.median(v):7.3f} ms  IQR {q[0]:.3f}-{q[2]:.3f}")
