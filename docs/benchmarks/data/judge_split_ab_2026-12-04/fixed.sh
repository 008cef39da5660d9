#!/usr/bin/env bash
# The fixed cost of one cpu evaluation, main against the judge split: `kernelevolve eval` of the ReLU fixture and
# its honest candidate, alternating, each eval's wall time and stages.
set -u
. /work/main/.venv/bin/activate
for i in 1 2 3 4 5; do
  for v in main split; do
    case $v in main) d=/work/main;; split) d=/tmp/split;; esac
    cd $d
    t0=$(date +%s.%N)
    PYTHONPATH=$d python -m kernelevolve eval tests/fixtures/kb_relu.py tests/fixtures/candidates/relu_ok.py \
      --target cpu --json 2>/dev/null > /tmp/ab3/fixed-$v-$i.json
    t1=$(date +%s.%N)
    python3 - $v $i /tmp/ab3/fixed-$v-$i.json $t0 $t1 <<'PY'
import json, sys
d = json.load(open(sys.argv[3]))
wall = float(sys.argv[5]) - float(sys.argv[4])
st = ", ".join(f"{k} {v:.2f}" for k, v in d["stages"].items())
print(f"{sys.argv[1]} run {sys.argv[2]}: {d['status']} {d['speedup']:.2f}x wall {wall:.2f} s; stages: {st}", flush=True)
PY
  done
done
