#!/usr/bin/env bash
# Call B (stop 40): the GPU suite's last test (call A's 440 s ran out in it), then the ranking seeds with the split.
source benchmarks/device_env.sh
timeout 150 python3 -m pytest -v -rA -m gpu tests/test_gpu.py -k memory_plan_keeps_trials > $OUT/gpu_last.log 2>&1; echo "last rc=$?"
timeout 390 python3 -m kernelevolve bench ranking --no-search --target cuda --out $OUT/bench --runs-dir /tmp/runs > $OUT/bench.log 2>&1; echo "bench rc=$?"
grep -E "passed|failed" $OUT/gpu_last.log | tail -2 | cut -c1-200
tail -16 $OUT/bench.log | cut -c1-200
