#!/usr/bin/env bash
# Call A (stop 40): the whole GPU suite on main's final code (d34be69+), then where the unstaged time goes.
source benchmarks/device_env.sh
git log --oneline -1 > $OUT/commit.txt 2>/dev/null || true
timeout 440 python3 -m pytest -v -rA -m gpu tests/adversarial/test_adversarial_gpu.py tests/test_gpu.py > $OUT/gpu_suite.log 2>&1; echo "suite rc=$?"
timeout 110 python3 benchmarks/eval_timeline.py --target cuda --n 5 --show-ms 20 --out $OUT/timeline_split.json > $OUT/timeline_split.log 2>&1; echo "timeline rc=$?"
tail -25 $OUT/timeline_split.log | cut -c1-200
grep -E "passed|failed|error" $OUT/gpu_suite.log | tail -8 | cut -c1-200
