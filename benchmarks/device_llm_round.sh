#!/usr/bin/env bash
# One round of a deferred model's search on the device: `kernelevolve bench SUITE --llm inbox:` advances every
# problem's run by one round and stops `waiting`; the run folder (store, artifacts, the inbox of prompts and
# answers) comes back as $OUT/llm.tgz, and the next call carries it again (docs/benchmarks/llm.md).
# Usage: LLM_DIR=runs/h200 SUITE=ranking BENCH_SECONDS=N PYTEST_SECONDS=N benchmarks/device_llm_round.sh [bench options]
set -uo pipefail
OUT=${OUT:-/tmp/out}
D=${LLM_DIR:?set LLM_DIR to the run folder, e.g. runs/h200}
mkdir -p "$D/inbox" "$D/logs"
ENV_OUT=$D/logs source "$(dirname "$0")/device_env.sh"
round=$(date -u +%Y%m%dT%H%M%S)
if [ "${PYTEST_SECONDS:-0}" != 0 ]; then
  timeout "$PYTEST_SECONDS" python3 -m pytest -q -m gpu ${PYTEST_ARGS:-tests/test_gpu.py} -p no:cacheprovider \
    > "$D/logs/pytest_gpu-$round.log" 2>&1
  echo "pytest exit $?"; tail -n 8 "$D/logs/pytest_gpu-$round.log"
fi
if [ "${GPU_MONITOR:-0}" != 0 ]; then  # what holds the GPU, every 5 s: a process outliving its evaluation shows here
  ( while true; do date -u +%T; nvidia-smi --query-compute-apps=pid,used_memory --format=csv,noheader
      ps -eo pid,ppid,stat,etime,rss,args --sort=pid | grep -E "kernelevolve|python" | grep -v grep | cut -c1-160
      sleep 5; done > "$D/logs/gpu_procs-$round.log" 2>&1 ) &
fi
# The peaks the prompts state as measured (the harness measures the same once per machine).
python3 -c "import torch; from kernelevolve.platforms.peaks import peaks; print(peaks(torch.device('cuda')))"
timeout "${BENCH_SECONDS:-400}" python3 -m kernelevolve bench "${SUITE:-ranking}" --target cuda --no-seeds \
  --llm "inbox:$D/inbox" --runs-dir "$D/runs" --out "$D/bench" "$@" > "$D/logs/bench-$round.log" 2>&1
echo "bench exit $?"
tar -czf "$OUT/llm.tgz" "$D"
tail -n 25 "$D/logs/bench-$round.log"
