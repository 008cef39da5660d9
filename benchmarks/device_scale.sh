#!/usr/bin/env bash
# One device call on one GPU: benchmarks/scale_device.py (the one-GPU part of docs/benchmarks/scale.md, no Ray).
# Usage: OUT=DIR [SCALE_SECONDS=290] bash benchmarks/device_scale.sh [scale_device.py options]
# Writes $OUT/scale_device.json (after each part) and .md; prints the table last, also for a run cut short.
set -uo pipefail
source "$(dirname "$0")/device_env.sh"
timeout "${SCALE_SECONDS:-290}" python3 benchmarks/scale_device.py --out "$OUT/scale_device.json" "$@" \
  > "$OUT/scale_device.log" 2>&1
echo "scale_device exit $?"
grep -v -E '^(\||## |$)' "$OUT/scale_device.log" | head -60
[ -s "$OUT/scale_device.json" ] && python3 benchmarks/scale_records.py "$OUT/scale_device.json"
