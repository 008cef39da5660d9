#!/usr/bin/env bash
# The split's paging case with and without the sandbox (KERNELEVOLVE_SANDBOX=off), and main, OpenMP passive.
set -u
. /work/main/.venv/bin/activate
export OMP_WAIT_POLICY=PASSIVE GOMP_SPINCOUNT=0
for i in 1 2 3; do
  for v in split-on split-off main-on; do
    case $v in main*) d=/work/main;; *) d=/tmp/split;; esac
    case $v in *off) sb=off;; *) sb=on;; esac
    cd $d
    KERNELEVOLVE_SANDBOX=$sb PYTHONPATH=$d python -m kernelevolve eval examples/rmsnorm/problem.py \
      examples/rmsnorm/candidate_cpp.py --target cpu --json 2>/dev/null > /tmp/ab3/sb-$v-$i.json
    python3 - $v $i /tmp/ab3/sb-$v-$i.json <<'PY'
import json, sys
d = json.load(open(sys.argv[3]))
c = d['cases'][0]
print(f"{sys.argv[1]} run {sys.argv[2]}: {d['status']} {d['speedup']:.2f}x; 4096x4096: eager {c['t_eager_ms']:.1f} ms, "
      f"alone in the judge {c.get('t_eager_judge_ms')}, candidate {c['t_candidate_ms']:.1f} ms; sandbox: {d['sandbox'][:40]}", flush=True)
PY
  done
done
