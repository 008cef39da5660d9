import sys, time
from pathlib import Path
ROOT = Path.cwd()
sys.path.insert(0, str(ROOT))
from kernelevolve.eval.evaluator import Evaluator
from kernelevolve.problem.problem import load_problem

names = sys.argv[1].split(",")
with Evaluator("cuda", timeout_s=300, prestart=True) as ev:
    for name in names:
        d = ROOT / "suites" / "ranking" / name
        t0 = time.time()
        r = ev.evaluate(load_problem(d / "problem.py"), d / "seed_triton.py")
        parts = {k: round(v, 2) for k, v in r.stages.items() if k.startswith("timing")}
        print(f"== {name} {r.status.value} {time.time()-t0:.0f}s speedup={r.speedup} {r.reason[:400]}")
        print("   parts", parts)
        for c in r.cases:
            print("   case", c.shape, "cand", c.t_candidate_ms, "host", c.t_candidate_host_ms, "unseen", c.t_candidate_unseen_ms)
        for line in r.log_tail.splitlines():
            if "unseen-inputs block" in line or "Thread" in line or "tqdm" in line:
                print("   ", line.split("] ", 1)[-1][:300])
        sys.stdout.flush()
