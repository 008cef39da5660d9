#!/usr/bin/env bash
# Sourced by the device scripts: the packages the device image lacks (carried as wheels in .whl, see
# docs/benchmarks/README.md), the repository on PYTHONPATH, and versions.txt under ${ENV_OUT:-$OUT}.
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT" "${ENV_OUT:-$OUT}"
# Installed once per machine and set of wheels (a warm machine given a new wheel installs again): device_pair.sh
# sources this before its commands, which source it again in parallel.
wheels=$(ls .whl 2>/dev/null | sort | md5sum | cut -c1-32)
if [ -d .whl ] && [ "$(cat /tmp/site/.kernelevolve-wheels 2>/dev/null)" != "$wheels" ]; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
    && echo "$wheels" > /tmp/site/.kernelevolve-wheels
fi
if [ -e /tmp/site/.kernelevolve-wheels ]; then export PYTHONPATH=/tmp/site:${PYTHONPATH:-}; fi
export PYTHONPATH=$PWD:${PYTHONPATH:-} PYTHONUNBUFFERED=1 KERNELEVOLVE_CACHE=${KERNELEVOLVE_CACHE:-/tmp/ke-cache}
{ nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,clocks.max.mem --format=csv
  python3 -c "import torch, triton, sys; print('python', sys.version.split()[0], 'torch', torch.__version__, 'triton', triton.__version__)"
} | tee "${ENV_OUT:-$OUT}/versions.txt"
