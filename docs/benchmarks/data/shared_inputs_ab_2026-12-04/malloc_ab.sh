#!/usr/bin/env bash
# The reference's time against glibc's malloc settings: with the defaults, 12 MB temporaries may come from fresh
# mmap'd pages on every call (page faults, zeroing); with the thresholds raised they stay in the heap.
# Usage: bash malloc_ab.sh > malloc_ab.log
cd "$(dirname "$0")"
for i in 1 2; do
  echo "== glibc defaults, run $i"; python ab.py | grep -E "anonymous, back|file-backed, back|threads"
  echo "== MALLOC_MMAP_THRESHOLD_=MALLOC_TRIM_THRESHOLD_=4 GiB, run $i"
  MALLOC_MMAP_THRESHOLD_=4294967296 MALLOC_TRIM_THRESHOLD_=4294967296 python ab.py | grep -E "anonymous, back|file-backed, back"
done
