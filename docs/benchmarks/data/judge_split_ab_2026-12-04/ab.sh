#!/usr/bin/env bash
# The judge split against main, with and without the worker's fixed heap thresholds: `kernelevolve eval` of the
# C++ RMSNorm example on the cpu target, the three trees alternating.
#   main: 7d6fba3; main+alloc: 7d6fba3 with eval/worker/allocator.py called at the worker's start;
#   split: 7d6fba3 with the judge split re-applied, and the allocator.
set -u
. /work/main/.venv/bin/activate
for i in ${RUNS:-1 2 3 4}; do
  for v in ${ARMS:-main alloc split}; do
    case $v in main) d=/work/main;; alloc) d=/tmp/mainalloc;; split) d=/tmp/split;; esac
    cd $d
    PYTHONPATH=$d python -m kernelevolve eval examples/rmsnorm/problem.py examples/rmsnorm/candidate_cpp.py \
      --target cpu --json 2>/dev/null > /tmp/ab3/$v-$i.json
    python3 - $v $i /tmp/ab3/$v-$i.json <<'PY'
import json, sys
d = json.load(open(sys.argv[3]))
cases = ', '.join(f"{c['t_eager_ms']:.2f} / {c['t_candidate_ms']:.2f} ms ({c['speedup']:.2f}x, faults {c.get('eager_faults_per_call')}/{c.get('candidate_faults_per_call')})" for c in d['cases'])
print(f"{sys.argv[1]} run {sys.argv[2]}: {d['status']} {d['speedup']:.2f}x; eager / candidate per case: {cases}", flush=True)
PY
  done
done
