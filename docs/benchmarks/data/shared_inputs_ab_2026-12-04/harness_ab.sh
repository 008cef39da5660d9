#!/usr/bin/env bash
# glibc's allocator settings, A/B through the harness: `kernelevolve eval` of the C++ RMSNorm example on the cpu
# target, alternating glibc's defaults with the mmap and trim thresholds at 4 GiB (exported here, they reach the
# worker: its environment is this one without credentials).
# Usage: bash harness_ab.sh > harness_ab.log
set -u
cd "$(git rev-parse --show-toplevel)"
for i in 1 2 3 4; do
  for cfg in defaults thresholds; do
    if [ "$cfg" = thresholds ]; then set -- MALLOC_MMAP_THRESHOLD_=4294967296 MALLOC_TRIM_THRESHOLD_=4294967296; else set --; fi
    env "$@" python -m kernelevolve eval examples/rmsnorm/problem.py examples/rmsnorm/candidate_cpp.py \
      --target cpu --json 2>/dev/null | python3 -c "
import json, sys
d = json.load(sys.stdin)
cases = ', '.join(f\"{c['t_eager_ms']:.2f} / {c['t_candidate_ms']:.2f} ms ({c['speedup']:.2f}x)\" for c in d['cases'])
print(f\"$cfg run $i: {d['status']} {d['speedup']:.2f}x; eager / candidate per case: {cases}\")"
  done
done
