#!/usr/bin/env bash
# fork_paging.py inside a v1 memory cgroup with the harness's limit (half the RAM), then outside it, twice.
set -u
. /work/main/.venv/bin/activate
cg=/sys/fs/cgroup/memory/kernelevolve-probe-paging
for i in 1 2; do
  mkdir -p $cg; echo $(( $(getconf _PHYS_PAGES) * $(getconf PAGESIZE) / 2 )) > $cg/memory.limit_in_bytes
  echo "in a memory cgroup, round $i"; bash -c "echo \$\$ > $cg/cgroup.procs; exec python /tmp/ab3/fork_paging.py"
  rmdir $cg
  echo "no cgroup, round $i"; python /tmp/ab3/fork_paging.py
done
