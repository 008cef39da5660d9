"""Build C++/CUDA extensions once per source: `load_inline` and `load` get a build directory named by the
hash of everything that affects the binary (name, sources, flags, torch version).

Candidates that differ only in Python (a tuned constant passed at run time) share one build; candidates
with different C++ never share, or race on, a build directory.

A build killed part-way (the evaluator SIGKILLs a worker's process group at its deadline) leaves torch's `lock`
file (torch.utils.file_baton.FileBaton) in its folder, and every later build there would wait on it for ever.
Each build therefore first takes an flock on `BUILD_LOCK` in the folder, which the kernel releases when its
holder dies: whoever holds it is the only live builder, so a `lock` found then has a dead holder. The folder is
then emptied (a killed build's objects are rebuilt, never loaded) and the build starts afresh.
"""

from __future__ import annotations

import contextlib
import fcntl
import functools
import hashlib
import json
import os
import shutil
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from kernelevolve.platforms.base import cache_dir


def _key(kind: str, args: tuple, kwargs: dict[str, Any]) -> str:
    import torch

    material = {"kind": kind, "args": args, "torch": torch.__version__}
    material.update({k: v for k, v in kwargs.items() if k not in ("verbose", "build_directory")})
    for k in ("sources",):  # `load` names files: hash their contents, not their paths
        if k in material and isinstance(material[k], (list, tuple)):
            material[k] = [Path(p).read_text() if Path(p).is_file() else p for p in material[k]]
    blob = json.dumps(material, sort_keys=True, default=str).encode()
    return hashlib.sha256(blob).hexdigest()[:20]


BUILD_LOCK = ".kernelevolve-build.lock"  # the flock every build in a folder holds; never deleted
TORCH_LOCK = "lock"  # torch's FileBaton: created at a build's start, removed at its end

# The stage report of the worker (eval/worker/harness.py): called with a build's name when it starts and with
# None when it ends. The worker reports `extension build NAME` meanwhile, and the evaluator gives that stage the
# compile deadline (--compile-timeout) instead of the candidate's.
BuildReport = Callable[[str | None], None]
BUILD_STAGE = "extension build"


def build_stage(name: str) -> str:
    return f"{BUILD_STAGE} {name}"


def is_build_stage(stage: str) -> bool:
    return stage.startswith(BUILD_STAGE + " ")


def _name(args: tuple, kwargs: dict[str, Any]) -> str:
    return str(kwargs.get("name", args[0] if args else "extension"))


def _clear(folder: Path, name: str) -> None:
    """Empty a folder a killed build left, and make torch forget it built `name` in this process (it would skip
    the build and load from the emptied folder)."""
    for entry in folder.iterdir():
        if entry.name == BUILD_LOCK:
            continue
        if entry.is_dir() and not entry.is_symlink():
            shutil.rmtree(entry, ignore_errors=True)
        else:
            entry.unlink(missing_ok=True)
    try:
        from torch.utils import cpp_extension

        cpp_extension.JIT_EXTENSION_VERSIONER.entries.pop(name, None)
    except AttributeError:  # a torch without the versioner: nothing remembered
        pass


@contextlib.contextmanager
def exclusive_build(folder: Path, name: str) -> Iterator[None]:
    """Hold the folder's build flock (waiting for a live builder to finish); clear what a dead one left."""
    fd = os.open(folder / BUILD_LOCK, os.O_RDWR | os.O_CREAT, 0o644)  # not inherited by the compiler
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        stale = folder / TORCH_LOCK
        if stale.exists():
            age = time.time() - stale.stat().st_mtime
            print(
                f"[kernelevolve] {folder}: removed the lock of a build that never finished ({age:.0f} s old, no live "
                "holder); rebuilding from scratch",
                file=sys.stderr,
                flush=True,
            )
            _clear(folder, name)
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)  # who builds now, for a person looking at the folder
        yield
    finally:
        os.close(fd)  # releases the flock


def install(root: Path | None = None, report: BuildReport | None = None) -> None:
    """Wrap torch.utils.cpp_extension.load_inline / load in this process (the worker, before the candidate).

    report: told when each build starts (its name) and ends (None), so the evaluator can give builds the
    compile deadline instead of the candidate's."""
    from torch.utils import cpp_extension

    base = root or cache_dir() / "extensions"
    for kind in ("load_inline", "load"):
        original = getattr(cpp_extension, kind)
        if getattr(original, "_kernelevolve_cached", False):
            continue

        @functools.wraps(original)
        def wrapper(*args: Any, _original=original, _kind=kind, **kwargs: Any) -> Any:
            name = _name(args, kwargs)
            if report is not None:
                report(name)
            try:
                # A build_directory the candidate names is replaced too: in the sandbox only the caches and
                # its private TMPDIR are writable (a folder beside its own file is not).
                folder = base / _key(_kind, args, kwargs)
                folder.mkdir(parents=True, exist_ok=True)
                kwargs["build_directory"] = str(folder)
                with exclusive_build(folder, name):
                    return _original(*args, **kwargs)
            finally:
                if report is not None:
                    report(None)

        wrapper._kernelevolve_cached = True  # type: ignore[attr-defined]
        setattr(cpp_extension, kind, wrapper)
