#!/usr/bin/env bash
source benchmarks/device_env.sh
git log --oneline -1 > $OUT/commit.txt 2>/dev/null
timeout 430 python3 -m pytest -v -rA -m gpu tests/adversarial/test_adversarial_gpu.py tests/test_gpu.py > $OUT/split_suite.log 2>&1
echo "split suite rc=$?"
KERNELEVOLVE_GPU_JUDGE=in-process timeout 110 python3 -m pytest -v -rA -m gpu tests/adversarial/test_adversarial_gpu.py -k "jagged" > $OUT/inprocess_jagged.log 2>&1
echo "in-process jagged rc=$?"
grep -E "^(FAILED|ERROR)|passed|failed" $OUT/split_suite.log | tail -12
grep -E "^caches_jagged|unseen-inputs block" $OUT/split_suite.log | head -8
grep -E "^(FAILED|ERROR)|passed|failed|^caches_jagged" $OUT/inprocess_jagged.log | tail -5
