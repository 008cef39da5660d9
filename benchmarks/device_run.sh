#!/usr/bin/env bash
# One device call: the harness measurements, then the GPU tests. Logs and JSON under $OUT.
# Usage: benchmarks/device_run.sh [harness_gpu.py options]; PYTEST_SECONDS bounds the test run.
set -uo pipefail
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
if [ -d .whl ]; then  # wheels for what the device image lacks (pydantic)
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
    && export PYTHONPATH=/tmp/site:${PYTHONPATH:-}
fi
export PYTHONPATH=$PWD:${PYTHONPATH:-} PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv | tee "$OUT/nvidia-smi.txt"
python3 -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__)" | tee -a "$OUT/nvidia-smi.txt"
python3 benchmarks/harness_gpu.py --out "$OUT/harness_gpu.json" "$@" > "$OUT/harness_gpu.log" 2>&1
if [ "${PYTEST_SECONDS:-400}" != 0 ]; then
  timeout "${PYTEST_SECONDS:-400}" python3 -m pytest -q -m gpu tests/test_gpu.py -p no:cacheprovider > "$OUT/pytest_gpu.log" 2>&1
  echo "pytest exit $?"; tail -3 "$OUT/pytest_gpu.log"
fi
tail -12 "$OUT/harness_gpu.log"
