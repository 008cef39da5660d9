import sys, time
sys.path.insert(0, ".")
import kernelevolve.eval.evaluator as E
from kernelevolve.problem.problem import load_problem
from pathlib import Path
for name in dir(E):
    c = getattr(E, name)
    if isinstance(c, type) and "log_tail" in c.__dict__:
        c.log_tail.__defaults__ = (10**7,)
SUITE = Path("suites/ranking")
with E.Evaluator("cuda", timeout_s=300, prestart=True) as ev:
    for name in sys.argv[1].split(","):
        t0 = time.time()
        r = ev.evaluate(load_problem(SUITE / name / "problem.py"), SUITE / name / "seed_triton.py")
        print(f"== {name} {r.status.value} {time.time()-t0:.0f}s {r.reason[:250]}")
        for c in r.cases:
            print("   case", c.shape, c.t_candidate_ms, c.t_candidate_unseen_ms)
        for line in r.log_tail.splitlines():
            if "DIAG" in line or "unseen-inputs block" in line:
                print("   ", line.split("] ", 1)[-1])
        sys.stdout.flush()
