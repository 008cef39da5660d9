"""One process searches a run at a time: an flock on the run's folder, which the kernel releases when its holder
exits (a killed process leaves nothing to clean up). Two processes stepping one run would both write its store and
its pending calls. The lock is local to the machine. Processes that share a run on a PostgreSQL store
(`optimize --join`) do not take it: the store keeps them apart (store/agents.py)."""

from __future__ import annotations

import fcntl
import os
from pathlib import Path

LOCK_NAME = ".search.lock"
_HELD: dict[Path, int] = {}  # this process's locks: opening a run it already holds is no conflict


class RunInUse(Exception):
    """Another process is searching the run."""


def hold(folder: Path, run_id: str) -> None:
    path = (folder / LOCK_NAME).resolve()
    if path in _HELD:
        return
    folder.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        holder = os.pread(fd, 64, 0).decode(errors="replace").strip() or "unknown"
        os.close(fd)
        raise RunInUse(
            f"run {run_id} is being searched by another process (pid {holder}): one process searches a run at a "
            "time; wait for it to finish, or stop it and run the same command again"
        ) from None
    os.ftruncate(fd, 0)
    os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
    _HELD[path] = fd


def release(folder: Path) -> None:
    fd = _HELD.pop((folder / LOCK_NAME).resolve(), None)
    if fd is not None:
        os.close(fd)  # releases the flock
