#!/usr/bin/env bash
source benchmarks/device_env.sh
{ nproc; lscpu; } > $OUT/lscpu.txt 2>&1
grep -m1 "model name" /proc/cpuinfo
timeout 150 python3 .gpu/hostbound.py > $OUT/hostbound.log 2>&1; echo "hostbound rc=$?"
timeout 200 python3 benchmarks/gpu_block_probe.py --seeds batch_event_truncate,merge_bucketized_dense --repeat 2 --spares 0 > $OUT/probe.log 2>&1; echo "probe rc=$?"
timeout 75 python3 benchmarks/harness_gpu.py --examples rmsnorm --repeats 5 --compile-repeats 0 --out $OUT/fixed_split.json > $OUT/fixed_split.log 2>&1; echo "fixed split rc=$?"
KERNELEVOLVE_GPU_JUDGE=in-process timeout 65 python3 benchmarks/harness_gpu.py --examples rmsnorm --repeats 5 --compile-repeats 0 --out $OUT/fixed_inproc.json > $OUT/fixed_inproc.log 2>&1; echo "fixed inproc rc=$?"
tail -50 $OUT/hostbound.log
grep -E "^==|case|CPUs" $OUT/probe.log | cut -c1-260
python3 - <<'PY'
import json, os
for tag in ("split", "inproc"):
    try:
        d = json.load(open(f"{os.environ['OUT']}/fixed_{tag}.json"))
    except Exception as e:
        print(tag, "no json", e); continue
    s = d["examples"]["rmsnorm"]["repeat_no_compile"]
    st = s["stages_median_s"]
    print(tag, "wall", round(s["wall_s_median"], 3), {k: round(v, 3) for k, v in st.items()})
PY
