import sys, time
sys.path.insert(0, ".")
from pathlib import Path
from kernelevolve.eval.evaluator import Evaluator
from kernelevolve.problem.problem import load_problem
P = Path("suites/ranking/batch_event_truncate")
spares = int(sys.argv[1]); n = int(sys.argv[2])
with Evaluator("cuda", timeout_s=300, prestart=spares) as ev:
    for i in range(n):
        t0 = time.time()
        r = ev.evaluate(load_problem(P / "problem.py"), P / "seed_triton.py")
        ratios = [round((c.t_eager_ms or 0) / c.t_eager_judge_ms, 2) if c.t_eager_judge_ms else None for c in r.cases]
        print(f"spares={spares} #{i} {r.status.value} {time.time()-t0:.0f}s eager(theirs/judge)={ratios} {r.reason[:160]}", flush=True)
