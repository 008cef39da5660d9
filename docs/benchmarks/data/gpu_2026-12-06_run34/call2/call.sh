#!/usr/bin/env bash
source benchmarks/device_env.sh
timeout 170 python3 -m pytest -v -rA -m gpu tests/test_gpu.py -k "examples_on_cuda or tf32 or memory_plan" > $OUT/gpu_rest.log 2>&1
echo "rest rc=$?"; grep -E "^(FAILED|ERROR)|passed|failed|^E " $OUT/gpu_rest.log | head -12 | cut -c1-600
timeout 330 python3 -m kernelevolve bench ranking --no-search --target cuda --out $OUT/bench --runs-dir $OUT/runs > $OUT/bench.log 2>&1
echo "bench rc=$?"; tail -25 $OUT/bench.log | cut -c1-200
grep -h "unseen-inputs block" -r $OUT/runs 2>/dev/null | head -5 | cut -c1-300
