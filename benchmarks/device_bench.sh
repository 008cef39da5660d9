#!/usr/bin/env bash
# One device call: the GPU tests, then `kernelevolve bench ranking` (options passed through).
# Usage: OUT=DIR BENCH_SECONDS=N PYTEST_SECONDS=N benchmarks/device_bench.sh [bench options]
# Everything lands in $OUT/results.tgz plus a short summary on stdout.
set -uo pipefail
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT/work"
if [ -d .whl ]; then  # wheels for what the device image lacks (pydantic, sqlalchemy, tenacity, bm25s)
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
    && export PYTHONPATH=/tmp/site:${PYTHONPATH:-}
fi
export PYTHONPATH=$PWD:${PYTHONPATH:-} PYTHONUNBUFFERED=1 KERNELEVOLVE_CACHE=/tmp/ke-cache
W="$OUT/work"
{ nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,clocks.max.mem --format=csv
  python3 -c "import torch, triton, sys; print('python', sys.version.split()[0], 'torch', torch.__version__, 'triton', triton.__version__)"
} | tee "$W/versions.txt"
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
