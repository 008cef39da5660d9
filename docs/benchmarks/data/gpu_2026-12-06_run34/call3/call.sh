#!/usr/bin/env bash
source benchmarks/device_env.sh
python3 -c "import tqdm, inspect; from tqdm import _monitor; print('tqdm', tqdm.__version__); print([l for l in inspect.getsource(_monitor).splitlines() if 'name' in l])" 2>&1 | head -5
python3 -c "import torch._inductor.config as c; print('disable_progress', c.disable_progress)"
grep -rln "tqdm" $(python3 -c "import torch, os; print(os.path.dirname(torch.__file__))")/_inductor/*.py | head -5
timeout 300 python3 .gpu/probe2.py wukong_fm,mapid,jagged_sum,merge_bucketized_dense,batch_event_truncate > $OUT/probe2.log 2>&1
echo "probe rc=$?"; cat $OUT/probe2.log | grep -v "^\s*$" | grep -E "^==|^   " | cut -c1-330
