#!/usr/bin/env bash
source benchmarks/device_env.sh
timeout 330 python3 -m pytest -v -rA -m gpu tests/adversarial/test_adversarial_gpu.py > $OUT/adv_suite.log 2>&1; echo "adversarial rc=$?"
timeout 150 python3 benchmarks/gpu_block_probe.py --seeds batch_event_truncate,merge_bucketized_dense --repeat 1 --spares 0 > $OUT/probe.log 2>&1; echo "probe rc=$?"
git apply .gpu/diag.patch && timeout 60 python3 .gpu/fixed_diag.py > $OUT/fixed_diag.log 2>&1; echo "fixed diag rc=$?"; git checkout kernelevolve/eval/worker/runner.py
grep -E "FAILED|Error|passed|failed" $OUT/adv_suite.log | tail -8 | cut -c1-300
grep -h "unseen-inputs check:" $OUT/adv_suite.log | cut -c1-250 | head -6
grep -E "^==|case|review" $OUT/probe.log | cut -c1-300
cat $OUT/fixed_diag.log | cut -c1-700
