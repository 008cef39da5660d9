#!/usr/bin/env bash
# Call C: the ranking suite's seeds with the split, then the fixed cost, split and in-process.
source benchmarks/device_env.sh
timeout 380 python3 -m kernelevolve bench ranking --no-search --target cuda --out $OUT/bench --runs-dir /tmp/runs > $OUT/bench.log 2>&1; echo "bench rc=$?"
timeout 90 python3 benchmarks/harness_gpu.py --examples rmsnorm --repeats 5 --compile-repeats 0 --out $OUT/fixed_split.json > $OUT/fixed_split.log 2>&1; echo "fixed split rc=$?"
KERNELEVOLVE_GPU_JUDGE=in-process timeout 80 python3 benchmarks/harness_gpu.py --examples rmsnorm --repeats 5 --compile-repeats 0 --out $OUT/fixed_inproc.json > $OUT/fixed_inproc.log 2>&1; echo "fixed inproc rc=$?"
tail -22 $OUT/bench.log | cut -c1-220
python3 .gpu/s39/table.py split=$OUT/fixed_split.json inproc=$OUT/fixed_inproc.json
