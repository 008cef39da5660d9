"""rmsnorm's Triton candidate evaluated 4 times (the split): each evaluation's stages, and the candidate
process's own diag lines from the worker's log (diag.patch applied)."""
import json, os, sys, time
from pathlib import Path
ROOT = Path.cwd()
sys.path.insert(0, str(ROOT))
from kernelevolve.eval.evaluator import Evaluator
from kernelevolve.problem.problem import load_problem
ex = ROOT / "examples" / "rmsnorm"
out = []
with Evaluator("cuda", timeout_s=300, prestart=True) as ev:
    for i in range(4):
        t0 = time.perf_counter()
        r = ev.evaluate(load_problem(ex / "problem.py"), ex / "candidate_triton.py", compile_baseline=False)
        wall = time.perf_counter() - t0
        diag = [l.split("] ", 1)[1] for l in r.log_tail.splitlines() if "diag" in l or "unseen-inputs block" in l]
        out.append({"wall": wall, "status": r.status.value, "stages": r.stages, "diag": diag})
        st = {k: round(v, 3) for k, v in r.stages.items() if not k.startswith(("worker_start", "load."))}
        print(f"eval {i} {r.status.value} wall {wall:.3f} less compile {wall - r.stages.get('compile', 0):.3f}", st)
        for d in diag:
            print("   ", d[:200])
Path(os.environ.get("OUT", "/tmp/out"), "fixed_diag.json").write_text(json.dumps(out, indent=1))
