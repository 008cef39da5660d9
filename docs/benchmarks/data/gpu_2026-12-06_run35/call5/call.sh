#!/usr/bin/env bash
source benchmarks/device_env.sh
timeout 360 python3 -m kernelevolve bench ranking --no-search --target cuda --out $OUT/bench --runs-dir $OUT/runs > $OUT/bench.log 2>&1
echo "bench rc=$?"
timeout 75 python3 benchmarks/harness_gpu.py --examples rmsnorm --repeats 5 --compile-repeats 0 --out $OUT/fixed_split.json > $OUT/fixed_split.log 2>&1; echo "fixed split rc=$?"
KERNELEVOLVE_GPU_JUDGE=in-process timeout 65 python3 benchmarks/harness_gpu.py --examples rmsnorm --repeats 5 --compile-repeats 0 --out $OUT/fixed_inproc.json > $OUT/fixed_inproc.log 2>&1; echo "fixed inproc rc=$?"
KERNELEVOLVE_GPU_JUDGE=in-process timeout 55 python3 -m pytest -v -rA -m gpu tests/adversarial/test_adversarial_gpu.py -k jagged > $OUT/inproc_jagged.log 2>&1; echo "inproc jagged rc=$?"
tail -22 $OUT/bench.log | cut -c1-220
grep -h "unseen-inputs block" -r $OUT/runs 2>/dev/null | head -30 | cut -c1-250
grep -E "^\| rmsnorm" $OUT/fixed_split.log $OUT/fixed_inproc.log | cut -c1-200
grep -E "passed|failed" $OUT/inproc_jagged.log | tail -3
