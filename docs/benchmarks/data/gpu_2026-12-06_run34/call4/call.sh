#!/usr/bin/env bash
source benchmarks/device_env.sh
git log --oneline -1 > $OUT/commit.txt 2>/dev/null
timeout 60 python3 .gpu/probe2.py wukong_fm > $OUT/probe_wukong.log 2>&1
echo "probe rc=$?"; grep -E "^==|unseen-inputs block|case" $OUT/probe_wukong.log | cut -c1-250
timeout 490 python3 -m pytest -v -rA -m gpu tests/adversarial/test_adversarial_gpu.py tests/test_gpu.py > $OUT/split_suite.log 2>&1
echo "split suite rc=$?"
grep -E "^(FAILED|ERROR)|passed|failed" $OUT/split_suite.log | tail -12 | cut -c1-300
grep -E "^caches_jagged" $OUT/split_suite.log | head -3 | cut -c1-300
