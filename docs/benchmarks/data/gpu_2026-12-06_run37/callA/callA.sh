#!/usr/bin/env bash
# Call A: where the split's fixed cost stands after the worker-exit changes.
source benchmarks/device_env.sh
nproc; lscpu | grep -E "Model name|^CPU\(s\)" 
timeout 150 python3 .gpu/s39/timeline.py --target cuda --n 5 --out $OUT/timeline_split.json > $OUT/timeline_split.log 2>&1; echo "timeline rc=$?"
tail -4 $OUT/timeline_split.log
timeout 200 python3 benchmarks/harness_gpu.py --examples rmsnorm --repeats 5 --compile-repeats 0 --out $OUT/fixed_split.json > $OUT/fixed_split.log 2>&1; echo "split rc=$?"
KERNELEVOLVE_GPU_JUDGE=in-process timeout 200 python3 benchmarks/harness_gpu.py --examples rmsnorm --repeats 5 --compile-repeats 0 --out $OUT/fixed_inproc.json > $OUT/fixed_inproc.log 2>&1; echo "inproc rc=$?"
python3 .gpu/s39/table.py split=$OUT/fixed_split.json inproc=$OUT/fixed_inproc.json
