"""Who holds the GPU when an evaluation begins, as the evaluator sees it: NVML's memory per process, each process
named by its place among the evaluator's own (docs/harness.md, "Memory").

The workers live in PID namespaces of their own, so only the parent, which knows its children's host pids, can
tell its spare workers, an evaluation still exiting and another job apart. Torch-free: the parent never makes a
CUDA context. The job carries what this returns; the judge words the result's note from it (eval/worker/memory.py).
"""

from __future__ import annotations

import os
from collections.abc import Iterable

from kernelevolve.eval.launch import spawn
from kernelevolve.platforms import gpu_memory

# The roles, in the order a note names them.
PARENT = "this evaluator's own process"
SPARES = "spare workers"
OURS = "other workers of this evaluator's process"
EXITING = "the last evaluation's processes, still exiting"
OTHER = "another job's processes"
ROLES = (PARENT, SPARES, OURS, EXITING, OTHER)


def census(
    device_index: int,
    evaluation: Iterable[int],
    spares: Iterable[int],
    exiting: Iterable[int],
) -> dict[str, list[int]] | None:
    """{role: [processes, bytes]} of every process holding memory on the device but this evaluation's own (its
    worker's tree, `evaluation`); spares: the spare workers' root pids; exiting: the last evaluation's pids still
    exiting. None where NVML cannot answer."""
    held = gpu_memory.processes(device_index)
    if held is None:
        return None
    table = spawn.processes()
    own = set(evaluation)
    spare = {pid for root in spares for pid in spawn.process_tree(root, table)}
    ours = set(spawn.process_tree(os.getpid(), table))
    gone = set(exiting)
    out: dict[str, list[int]] = {}
    for pid, used in held.items():
        if pid in own:
            continue
        role = (
            PARENT
            if pid == os.getpid()
            else SPARES
            if pid in spare
            else EXITING
            if pid in gone
            else OURS
            if pid in ours
            else OTHER
        )
        count, total = out.get(role, [0, 0])
        out[role] = [count + 1, total + used]
    return {role: out[role] for role in ROLES if role in out}
