#!/bin/bash
. /work/main/.venv/bin/activate
for i in 1 2 3 4 5; do
 for v in main split; do
  if [ $v = main ]; then cd /work/main; P=; else cd /tmp/split; P=/tmp/split; fi
  PYTHONPATH=$P python -m kernelevolve eval examples/rmsnorm/problem.py examples/rmsnorm/candidate_cpp.py --target cpu --json 2>/dev/null > /tmp/ab/$v-$i.json
  python - $v /tmp/ab/$v-$i.json <<'PY'
import json,sys
d=json.load(open(sys.argv[2]))
print(sys.argv[1], round(d['speedup'],2), [(round(c['t_eager_ms'],2), round(c['t_candidate_ms'],2), round(c['t_eager_iqr_ms'],2)) for c in d['cases']], flush=True)
PY
 done
done
