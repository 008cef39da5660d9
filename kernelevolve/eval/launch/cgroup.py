"""A memory cgroup per candidate process (parent side, torch-free): one limit over the worker and everything it
starts (compilers, forked children), where a per-process address-space cap let four children hold four times it.

The worker joins its cgroup in eval/launch/confine.py, before the file system (the cgroup files with it) turns read-only
and its capabilities are dropped, so nothing it starts can leave. cgroup v1 (a writable `memory` controller) and v2
(`memory` enabled for this process's cgroup's children, or delegated to its cgroup and enabled here) are both used
where this process may create cgroups (root, or a delegated subtree); elsewhere there is none, and `sandbox` in
every result says so.
"""

from __future__ import annotations

import functools
import itertools
import os
import subprocess
import sys
import time
from pathlib import Path

CGROUP_FS = Path("/sys/fs/cgroup")
SELF_CGROUP = Path("/proc/self/cgroup")  # where this process sits in each hierarchy
LEAF = "kernelevolve-processes"  # v2: where the processes of this process's own cgroup move (_enable_memory_below)
_ids = itertools.count()


@functools.cache
def _root() -> tuple[Path | None, str]:
    """(the folder to make cgroups in, 'v1' or 'v2'), or (None, why there is none)."""
    try:
        lines = SELF_CGROUP.read_text().splitlines()
    except OSError as e:
        return None, f"no /proc/self/cgroup ({e.strerror})"
    paths = {}
    for line in lines:
        _, controllers, path = line.split(":", 2)
        for c in controllers.split(",") if controllers else [""]:
            paths[c] = path.lstrip("/")
    candidates: list[tuple[Path, str]] = []
    if (CGROUP_FS / "memory").is_dir():  # v1: the controller's own hierarchy (its view may be this container's)
        own = CGROUP_FS / "memory" / paths.get("memory", "")
        candidates += [(own, "v1"), (CGROUP_FS / "memory", "v1")]
    if (CGROUP_FS / "cgroup.controllers").is_file():  # v2: below this process's own cgroup
        own = CGROUP_FS / paths.get("", "")
        if own.name == LEAF and "memory" in _read(own.parent / "cgroup.subtree_control").split():
            own = own.parent  # an earlier evaluator moved this shell here: its cgroups go beside this leaf
        candidates.append((own, "v2"))
    why = "no memory cgroup controller"
    for folder, version in candidates:
        if version == "v2" and "memory" not in _read(folder / "cgroup.subtree_control").split():
            if not _enable_memory_below(folder):
                why = "cgroup v2 without the memory controller delegated to this process's children"
                continue
        why = _moves_into(folder)
        if not why:
            return folder, version
    return None, why


def _moves_into(folder: Path) -> str:
    """'' where a cgroup can be made under folder and a process moved into it, as eval/launch/confine.py moves each
    worker (else every worker would fail to start); else why not."""
    probe = folder / f"kernelevolve-probe-{os.getpid()}"
    try:
        probe.mkdir()
    except OSError as e:
        return f"cannot create a cgroup under {folder} ({e.strerror})"
    child = None
    try:
        child = subprocess.Popen([sys.executable, "-S", "-c", "import time; time.sleep(30)"], stdin=subprocess.DEVNULL)
        (probe / "cgroup.procs").write_text(str(child.pid))
        why = ""
    except OSError as e:
        why = f"cannot move a process into a cgroup under {folder} ({e.strerror})"
    finally:
        if child is not None:
            child.kill()
            child.wait()
    for _ in range(250):  # the killed process may take a moment to leave
        try:
            probe.rmdir()
            break
        except OSError:
            time.sleep(0.02)
    return why


def _enable_memory_below(folder: Path) -> bool:
    """Where memory is delegated to this process's own v2 cgroup but not enabled for its children: v2 enables a
    controller below a cgroup only while it holds no process itself, so the cgroup's processes (this one and its
    siblings, a shell perhaps) move into a leaf below it, where every limit above them still holds, and memory is
    enabled. False where memory is not delegated here or this process may not do so."""
    if "memory" not in _read(folder / "cgroup.controllers").split():
        return False
    if not os.access(folder / "cgroup.subtree_control", os.W_OK):  # then nothing is moved for nothing
        return False
    try:
        if folder != CGROUP_FS:  # the root cgroup is exempt: it may hold processes and enable controllers
            _move_processes(folder, folder / LEAF)
        (folder / "cgroup.subtree_control").write_text("+memory")
    except OSError:
        return False
    return True


def _move_processes(folder: Path, leaf: Path) -> None:
    leaf.mkdir(exist_ok=True)
    for _ in range(5):  # a process may fork while the others move
        pids = _read(folder / "cgroup.procs").split()
        if not pids:
            return
        for pid in pids:
            try:
                (leaf / "cgroup.procs").write_text(pid)
            except OSError:  # gone meanwhile
                pass


def _read(path: Path) -> str:
    try:
        return path.read_text()
    except OSError:
        return ""


def _sweep(root: Path) -> None:
    """Remove the empty cgroups of evaluators that are gone (one killed with -9 could not remove its own)."""
    for folder in root.glob("kernelevolve-*-*"):
        owner = folder.name.split("-")[1]
        if owner.isdigit() and not Path(f"/proc/{owner}").exists():
            try:
                folder.rmdir()
            except OSError:
                pass  # still holding a process: left for a later sweep


def available() -> bool:
    return _root()[0] is not None


def describe() -> str:
    """'a memory cgroup over its process tree' or 'memory capped per process (why)'."""
    folder, why = _root()
    return "a memory cgroup over its process tree" if folder is not None else f"memory capped per process ({why})"


class MemoryCage:
    """One cgroup with a memory limit: `folder` is handed to eval/launch/confine.py, which moves the worker into it."""

    def __init__(self, limit_bytes: int):
        root, version = _root()
        if root is None:
            raise OSError(f"no memory cgroup: {version}")
        self.version, self.limit = version, limit_bytes
        _sweep(root)
        self.folder = root / f"kernelevolve-{os.getpid()}-{next(_ids)}"
        self.folder.mkdir()
        try:
            if version == "v1":
                (self.folder / "memory.limit_in_bytes").write_text(str(limit_bytes))
                swap = self.folder / "memory.memsw.limit_in_bytes"
                if swap.exists():  # swap accounting on: no spilling past the limit into swap
                    swap.write_text(str(limit_bytes))
            else:
                (self.folder / "memory.max").write_text(str(limit_bytes))
                if (self.folder / "memory.swap.max").exists():
                    (self.folder / "memory.swap.max").write_text("0")
        except OSError:
            self.remove()
            raise

    def oom_killed(self) -> bool:
        """Whether the kernel killed a process of the cage for exceeding its limit."""
        if self.version == "v1":
            text = _read(self.folder / "memory.oom_control")
            kills = [line.split()[1] for line in text.splitlines() if line.startswith("oom_kill ")]
            if kills:
                return int(kills[0]) > 0
            return int(_read(self.folder / "memory.failcnt") or 0) > 0
        events = dict(line.split() for line in _read(self.folder / "memory.events").splitlines() if " " in line)
        return int(events.get("oom_kill", 0)) > 0

    def remove(self) -> None:
        """rmdir once its processes are gone (they may take a moment to leave after a kill; one still there after
        5 s is left to the next try: spawn.py tries again when the process object is collected)."""
        for _ in range(250):
            try:
                self.folder.rmdir()
                return
            except FileNotFoundError:
                return
            except OSError:
                time.sleep(0.02)
