#!/usr/bin/env bash
# One device call: the harness measurements, then the GPU tests. Logs and JSON under $OUT.
# Usage: benchmarks/device_run.sh [harness_gpu.py options]; PYTEST_SECONDS bounds the test run.
set -uo pipefail
source "$(dirname "$0")/device_env.sh"
python3 benchmarks/harness_gpu.py --out "$OUT/harness_gpu.json" "$@" > "$OUT/harness_gpu.log" 2>&1
if [ "${PYTEST_SECONDS:-400}" != 0 ]; then
  timeout "${PYTEST_SECONDS:-400}" python3 -m pytest -q -m gpu tests/test_gpu.py -p no:cacheprovider > "$OUT/pytest_gpu.log" 2>&1
  echo "pytest exit $?"; tail -3 "$OUT/pytest_gpu.log"
fi
tail -12 "$OUT/harness_gpu.log"
