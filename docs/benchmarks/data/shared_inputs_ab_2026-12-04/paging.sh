#!/usr/bin/env bash
# Usage: bash paging.sh > paging.log
cd "$(dirname "$0")"
for i in 1 2; do
  echo "== glibc defaults, run $i"; python paging.py
  echo "== thresholds at 4 GiB, run $i"; MALLOC_MMAP_THRESHOLD_=4294967296 MALLOC_TRIM_THRESHOLD_=4294967296 python paging.py
done
