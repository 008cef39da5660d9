"""Child processes that run candidate code (parent side, torch-free): each starts in a process group of its own,
with this package on its PYTHONPATH, and is killed as a whole group, so a compiler or any other process the
candidate started (ninja, g++, nvcc) dies with it. The evaluator's workers and the agent's fast check start here:
workers forked by the worker zygote where it runs (eval/launch/zygote.py: torch's import paid once per process, not per
worker), every other process by exec.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import weakref
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from kernelevolve.eval.launch import cgroup, sandbox, zygote
from kernelevolve.eval.wire import BUILD_FDS_ENV, DEVICE_ENV, LIFELINE_ENV, MEMORY_LIMIT_ENV, RESULT_FD_ENV

# What differs between workers of one environment: not the worker zygote's (eval/launch/zygote.py).
PER_WORKER = (
    RESULT_FD_ENV,
    LIFELINE_ENV,
    BUILD_FDS_ENV,
    DEVICE_ENV,
    MEMORY_LIMIT_ENV,
    "TMPDIR",
    "TMP",
    "TEMP",
    "TORCHINDUCTOR_CACHE_DIR",
)


def start(
    cmd: Sequence[str],
    *,
    sandboxed: bool = False,
    memory_limit: int = 0,
    writable: list[str] | None = None,
    **popen: Any,
) -> subprocess.Popen:
    """Popen in a new session: the child leads a process group of its own, which kill_group kills whole.
    sandboxed: in the candidate's sandbox (eval/launch/sandbox.py), where this machine can make it, with a private
    temporary folder as its TMPDIR (the only folder of its own it may write where the file system is confined),
    and, given memory_limit, in a memory cgroup of that size over its whole process tree (eval/launch/cgroup.py, where
    this machine has one); both are removed when the child is reaped (`release`) or forgotten. writable: the
    folders it may write besides its own (default: the caches a worker fills, eval/launch/sandbox.py)."""
    private_tmp, cage = None, None
    if sandboxed:
        env = dict(popen.get("env") if popen.get("env") is not None else os.environ)
        private_tmp, cage = _private(env, memory_limit)
        popen["env"] = env
    folder = str(cage.folder) if cage else None
    gpu = DEVICE_ENV in (popen.get("env") or {})  # a GPU target's worker: its minimal /dev holds the GPU's nodes
    full = sandbox.command(list(cmd), private_tmp, folder, writable, gpu) if sandboxed else list(cmd)
    try:
        proc = subprocess.Popen(full, start_new_session=True, **popen)
    except BaseException:
        _release(private_tmp, cage)
        raise
    _keep(proc, private_tmp, cage)
    return proc


def start_worker(env: dict[str, str], *, memory_limit: int, stdout: int, pass_fds: Sequence[int]) -> Any:
    """A worker (`python -m kernelevolve.eval.worker`) in the sandbox, as `start` makes it: stdin a pipe, stdout
    and stderr into the descriptor stdout, pass_fds kept at their numbers. Forked by this process's worker zygote
    (eval/launch/zygote.py: the same confinement, without the second of torch's import), or exec'd where there is none,
    for GPU targets, or with KERNELEVOLVE_ZYGOTE=off; a subprocess.Popen or what stands for one (pid, stdin,
    poll, wait, returncode)."""
    # GPU targets' workers start by exec until the forked start has run on a GPU (their spares hide the start).
    if zygote.enabled() and DEVICE_ENV not in env:
        forked_env = dict(env)
        private_tmp, cage = _private(forked_env, memory_limit)
        confinement = sandbox.confinement(private_tmp, str(cage.folder) if cage else None)
        zygote_env = {k: v for k, v in forked_env.items() if k not in PER_WORKER}
        try:
            proc = zygote.fork_worker(zygote_env, forked_env, stdout=stdout, pass_fds=pass_fds, confinement=confinement)
        except zygote.ZygoteError as e:
            _release(private_tmp, cage)
            print(f"[kernelevolve] this worker starts by exec: {e}", file=sys.stderr, flush=True)
        except BaseException:
            _release(private_tmp, cage)
            raise
        else:
            _keep(proc, private_tmp, cage)
            return proc
    return start(
        [sys.executable, "-m", "kernelevolve.eval.worker"],
        sandboxed=True,
        memory_limit=memory_limit,
        stdin=subprocess.PIPE,
        stdout=stdout,
        stderr=subprocess.STDOUT,
        pass_fds=tuple(pass_fds),
        env=env,
    )


def _private(env: dict[str, str], memory_limit: int) -> tuple[str | None, cgroup.MemoryCage | None]:
    """Where the file system is confined: a private temporary folder, set as TMPDIR in env, and given memory_limit
    a memory cgroup where one can be made."""
    if not sandbox.confines_files():
        return None, None
    private_tmp = tempfile.mkdtemp(prefix="kernelevolve-candidate-")
    env.update({name: private_tmp for name in ("TMPDIR", "TMP", "TEMP")})
    env["TORCHINDUCTOR_CACHE_DIR"] = sandbox.inductor_cache()  # shared, as outside the sandbox
    cage = None
    if memory_limit > 0 and cgroup.available():
        try:
            cage = cgroup.MemoryCage(memory_limit)
        except OSError:
            cage = None  # the per-process cap still holds (eval/worker/main.py)
    return private_tmp, cage


def _keep(proc: Any, private_tmp: str | None, cage: cgroup.MemoryCage | None) -> None:
    """The child's private folder and cgroup, removed with it (`release`) or when it is forgotten."""
    proc.private_tmp, proc.memory_cage = private_tmp, cage
    if private_tmp or cage:
        weakref.finalize(proc, _release, private_tmp, cage)


def _release(private_tmp: str | None, cage: cgroup.MemoryCage | None) -> None:
    if private_tmp:
        _remove(private_tmp)
    if cage is not None:
        cage.remove()


def _remove(folder: str) -> None:
    """rmtree, making unreadable folders readable first (overlayfs leaves its work folder at mode 000 inside a user
    namespace)."""

    def retry(func: Callable[[str], Any], path: str, _error: object) -> None:
        for target in _within(folder, os.path.dirname(path), path):  # never the folder's parent (/tmp)
            with contextlib.suppress(OSError):
                os.chmod(target, 0o700)
        with contextlib.suppress(OSError):
            if os.path.isdir(path) and not os.path.islink(path):
                shutil.rmtree(path, ignore_errors=True)
            else:
                func(path)

    if sys.version_info >= (3, 12):
        shutil.rmtree(folder, onexc=retry)
    else:
        shutil.rmtree(folder, onerror=retry)


def _within(folder: str, *paths: str) -> list[str]:
    """The paths that are the folder or lie inside it."""
    root = os.path.abspath(folder)
    return [p for p in paths if os.path.abspath(p) == root or os.path.abspath(p).startswith(root + os.sep)]


def release(proc: subprocess.Popen) -> None:
    """Remove a reaped child's private folder and memory cgroup."""
    _release(getattr(proc, "private_tmp", None), getattr(proc, "memory_cage", None))


def out_of_memory(proc: subprocess.Popen) -> bool:
    """Whether the kernel killed a process of the child's memory cgroup for exceeding it (before `release`)."""
    cage = getattr(proc, "memory_cage", None)
    return cage is not None and cage.oom_killed()


def kill_group(proc: subprocess.Popen) -> int:
    """SIGKILL the child's whole process group (its children too), then reap the child; returns its exit status."""
    if isinstance(proc, zygote.ZygoteProcess):
        proc.kill_group()
    else:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
    code = proc.wait()
    release(proc)
    return code


def processes() -> dict[int, tuple[int, int]]:
    """Every process this namespace sees: {pid: (parent pid, start time)}, from /proc ({} where there is none)."""
    try:
        entries = os.listdir("/proc")
    except OSError:
        return {}
    found = {}
    for entry in entries:
        if entry.isdigit() and (stat := _stat(int(entry))) is not None:
            found[int(entry)] = (stat[1], stat[2])
    return found


def process_tree(pid: int, table: dict[int, tuple[int, int]] | None = None) -> dict[int, int]:
    """pid and its descendants, each with its start time (so that a pid used again is not taken for it), from
    /proc, or from `table` (`processes()`) where given ({} where there is none)."""
    table = processes() if table is None else table
    children: dict[int, list[int]] = {}
    for p, (ppid, _start) in table.items():
        children.setdefault(ppid, []).append(p)
    tree, todo = {}, [pid]
    while todo:
        p = todo.pop()
        if p in table and p not in tree:
            tree[p] = table[p][1]
            todo.extend(children.get(p, []))
    return tree


def exiting(processes: dict[int, int]) -> dict[int, int]:
    """Those of the processes (pid: start time) that have not yet exited. A zombie has: its memory and its files,
    a device context among them, are released."""
    left = {}
    for pid, start in processes.items():
        found = _stat(pid)
        if found is not None and found[2] == start and found[0] not in "ZX":
            left[pid] = start
    return left


def _stat(pid: int) -> tuple[str, int, int] | None:
    """(state, parent pid, start time) of a process, or None where it is gone."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return fields[0], int(fields[1]), int(fields[19])
    except (OSError, IndexError, ValueError):
        return None


def run(
    cmd: Sequence[str],
    *,
    timeout_s: float,
    env: Mapping[str, str],
    pass_fds: Sequence[int] = (),
    on_start: Callable[[subprocess.Popen], None] | None = None,
) -> subprocess.CompletedProcess | None:
    """Run to completion, stdout and stderr captured as text; None when it ran past timeout_s, by then with its
    whole process group killed. (subprocess.run's timeout kills the child alone, and a grandchild holding the
    pipes would keep it waiting.) on_start: called with the started child (the build service's Channel.serve)."""
    popen: dict[str, Any] = {"stdout": subprocess.PIPE, "stderr": subprocess.PIPE, "text": True, "env": env}
    with start(cmd, sandboxed=True, pass_fds=tuple(pass_fds), **popen) as proc:
        try:
            if on_start is not None:
                on_start(proc)
            out, err = proc.communicate(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            kill_group(proc)
            return None
        except BaseException:  # interrupted while waiting: leave nothing running
            kill_group(proc)
            raise
    release(proc)
    return subprocess.CompletedProcess(list(cmd), proc.returncode, out, err)
