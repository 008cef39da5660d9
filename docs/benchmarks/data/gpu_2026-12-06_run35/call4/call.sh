#!/usr/bin/env bash
source benchmarks/device_env.sh
timeout 560 python3 -m pytest -v -rA -m gpu tests/adversarial/test_adversarial_gpu.py tests/test_gpu.py > $OUT/split_suite.log 2>&1
echo "split suite rc=$?"
grep -E "^(FAILED|ERROR)|passed|failed" $OUT/split_suite.log | tail -12 | cut -c1-400
grep -E "unseen-inputs check:" $OUT/split_suite.log | cut -c1-300 | head -12
