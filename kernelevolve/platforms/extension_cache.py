"""Build C++/CUDA extensions once per source: `load_inline` and `load` get a build directory named by the
hash of everything that affects the binary (name, sources, flags, torch version).

Candidates that differ only in Python (a tuned constant passed at run time) share one build; candidates
with different C++ never share, or race on, a build directory.
"""

from __future__ import annotations

import functools
import hashlib
import json
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


def install(root: Path | None = None) -> None:
    """Wrap torch.utils.cpp_extension.load_inline / load in this process (the worker, before the candidate)."""
    from torch.utils import cpp_extension

    base = root or cache_dir() / "extensions"
    for kind in ("load_inline", "load"):
        original = getattr(cpp_extension, kind)
        if getattr(original, "_kernelevolve_cached", False):
            continue

        @functools.wraps(original)
        def wrapper(*args: Any, _original=original, _kind=kind, **kwargs: Any) -> Any:
            if not kwargs.get("build_directory"):
                folder = base / _key(_kind, args, kwargs)
                folder.mkdir(parents=True, exist_ok=True)
                kwargs["build_directory"] = str(folder)
            return _original(*args, **kwargs)

        wrapper._kernelevolve_cached = True  # type: ignore[attr-defined]
        setattr(cpp_extension, kind, wrapper)
