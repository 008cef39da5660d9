#!/usr/bin/env bash
# Call B: the whole GPU suite on the final code, the split (the default).
source benchmarks/device_env.sh
timeout 570 python3 -m pytest -v -rA -m gpu tests/adversarial/test_adversarial_gpu.py tests/test_gpu.py > $OUT/gpu_suite.log 2>&1; echo "suite rc=$?"
grep -E "FAILED|ERROR|passed|failed" $OUT/gpu_suite.log | tail -12 | cut -c1-300
grep -h "unseen-inputs check:" $OUT/gpu_suite.log | cut -c1-250 | head -4
