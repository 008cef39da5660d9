#!/usr/bin/env bash
# One device call: the GPU tests, then `kernelevolve bench ranking` (options passed through).
# Usage: OUT=DIR BENCH_SECONDS=N PYTEST_SECONDS=N benchmarks/device_bench.sh [bench options]
# Everything lands in $OUT/results.tgz plus a short summary on stdout.
set -uo pipefail
OUT=${OUT:-/tmp/out}
W="$OUT/work"
mkdir -p "$W"
ENV_OUT=$W source "$(dirname "$0")/device_env.sh"
if [ "${PYTEST_SECONDS:-0}" != 0 ]; then
  timeout "${PYTEST_SECONDS}" python3 -m pytest -q -m gpu ${PYTEST_ARGS:-tests/test_gpu.py} -p no:cacheprovider \
    > "$W/pytest_gpu.log" 2>&1
  echo "pytest exit $?"; tail -15 "$W/pytest_gpu.log"
fi
if [ "${BENCH_SECONDS:-400}" != 0 ]; then
  timeout "${BENCH_SECONDS:-400}" python3 -m kernelevolve bench ranking --target cuda --out "$W/bench" \
    --runs-dir "$W/runs" "$@" > "$W/bench.log" 2>&1
  echo "bench exit $?"
fi
rm -rf "$W/runs"/*/ 2>/dev/null
tar -czf "$OUT/results.tgz" -C "$OUT" work && rm -rf "$W"
tar -xzOf "$OUT/results.tgz" work/bench/results.md 2>/dev/null | tail -20
