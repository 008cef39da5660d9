#!/usr/bin/env bash
# KernelBench problems at their published sizes, each with a correct kernel as its seed, run back to back through
# `kernelevolve bench` while benchmarks/gpu_census.py reads every process's device memory through NVML from outside
# (docs/benchmarks/gpu_memory.md). The problems and kernels: a folder with problems/NAME.py and kernels/NAME.py.
# Usage: OUT=dir KB=folder [ONLY=name,name] [BENCH_SECONDS=N] benchmarks/kb_memory.sh [bench options]
set -uo pipefail
OUT=${OUT:-/tmp/out}
source "$(dirname "$0")/device_env.sh"
KB=${KB:-benchmarks/data/kb_memory}
SUITE=$(mktemp -d)/kb
for p in "$KB"/problems/*.py; do
  n=$(basename "$p" .py)
  if [ -n "${ONLY:-}" ] && [[ ",$ONLY," != *",$n,"* ]]; then continue; fi
  mkdir -p "$SUITE/$n" && cp "$p" "$SUITE/$n/problem.py" && cp "$KB/kernels/$n.py" "$SUITE/$n/seed.py"
done
timeout "${BENCH_SECONDS:-540}" python3 benchmarks/gpu_census.py --out "$OUT/census.jsonl" -- \
  python3 -m kernelevolve bench "$SUITE" --target cuda --out "$OUT/bench" "$@" > "$OUT/bench.log" 2>&1
echo "census exit $?"
tail -n 12 "$OUT/bench.log"
python3 benchmarks/memory_table.py "$OUT/census.jsonl" "$OUT/bench/results.json"
