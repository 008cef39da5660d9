#!/usr/bin/env bash
source benchmarks/device_env.sh
nvidia-smi -q -d CLOCK,POWER | grep -E "Graphics|Memory|Power Limit" | head -8 > $OUT/clocks.txt
timeout 120 python3 .gpu/excess.py > $OUT/excess.log 2>&1; echo "excess rc=$?"
timeout 200 python3 benchmarks/gpu_block_probe.py --seeds wukong_fm,mapid > $OUT/probe.log 2>&1; echo "probe rc=$?"
timeout 140 python3 benchmarks/harness_gpu.py --examples rmsnorm --repeats 5 --compile-repeats 0 --out $OUT/fixed_split.json > $OUT/fixed_split.log 2>&1; echo "fixed split rc=$?"
KERNELEVOLVE_GPU_JUDGE=in-process timeout 120 python3 benchmarks/harness_gpu.py --examples rmsnorm --repeats 5 --compile-repeats 0 --out $OUT/fixed_inproc.json > $OUT/fixed_inproc.log 2>&1; echo "fixed inproc rc=$?"
echo ---; cat $OUT/excess.log | tail -8
echo ---; grep -E "^==|block|case" $OUT/probe.log | cut -c1-330
echo ---; tail -8 $OUT/fixed_split.log; echo; tail -8 $OUT/fixed_inproc.log
