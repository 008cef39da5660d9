#!/usr/bin/env bash
# One device call on a machine with several GPUs: command I runs on GPU I, all at once, each with OUT set to
# its own folder and its output in that folder's `log`. Everything lands in $OUT/results.tgz (the device tool
# returns at most 8 files), and the last lines of each log are printed.
# Usage: OUT=DIR bash benchmarks/device_pair.sh 'COMMAND FOR GPU 0' 'COMMAND FOR GPU 1' ...
set -uo pipefail
OUT=${OUT:-/tmp/out}
R="$OUT/results"
mkdir -p "$R"
ENV_OUT=$R source "$(dirname "$0")/device_env.sh"
i=0
for cmd in "$@"; do
  mkdir -p "$R/gpu$i"
  (
    export CUDA_VISIBLE_DEVICES=$i OUT="$R/gpu$i" KERNELEVOLVE_CACHE="/tmp/ke-cache-gpu$i"
    bash -c "$cmd" > "$R/gpu$i/log" 2>&1
    echo "exit $?" >> "$R/gpu$i/log"
  ) &
  i=$((i + 1))
done
wait
for log in "$R"/gpu*/log; do echo "== $log"; tail -8 "$log"; done
tar -czf "$OUT/results.tgz" -C "$OUT" results && rm -rf "$R"
