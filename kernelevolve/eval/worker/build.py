"""The build step (`python -m kernelevolve.eval.worker.build FOLDER`, request on stdin): torch's own build of one
extension request into FOLDER, started by the parent's build service (eval/builds.py) in the sandbox with only
FOLDER and a private temporary folder writable. The candidate's Python never runs here and the built library is
never imported (its static initialisers do not run), but the request's flags are the candidate's and reach the
compiler, so this step is confined as the candidate is, and the parent checks what it leaves.
"""

from __future__ import annotations

import json
import os
import re
import sys
from pathlib import Path
from typing import Any

ARCH = re.compile(r"[A-Za-z0-9.+]+([; ][A-Za-z0-9.+]+)*")  # "9.0", "8.0;9.0+PTX", "Hopper"


def build(request: dict[str, Any], folder: Path) -> None:
    """Build the request into folder with torch's load_inline / load, without importing what was built."""
    from torch.utils import cpp_extension

    arch = str(request.get("arch") or "")
    if arch:
        if not ARCH.fullmatch(arch):
            raise ValueError(f"not a CUDA architecture list: {arch!r}")
        os.environ["TORCH_CUDA_ARCH_LIST"] = arch
    kw = dict(request["kwargs"])
    files = request.get("files") or {}
    for name, text in files.items():
        (folder / Path(name).name).write_text(text)
    if request["kind"] == "load":
        kw["sources"] = [str(folder / Path(name).name) for name in kw.get("sources", [])]
    kw["build_directory"] = str(folder)
    call = getattr(cpp_extension, request["kind"])
    call = getattr(call, "__wrapped__", call)  # torch's own, where this process wrapped it (extension_cache)
    imported = cpp_extension._import_module_from_library
    cpp_extension._import_module_from_library = lambda *args, **kwargs: None
    try:
        call(**kw)
    finally:
        cpp_extension._import_module_from_library = imported


def main() -> None:
    folder = Path(sys.argv[1])
    request = json.loads(sys.stdin.read())
    try:
        build(request, folder)
    except Exception as e:  # noqa: BLE001 - the compiler's output, for the candidate's compile error
        print(f"{type(e).__name__}: {e}", file=sys.stderr, flush=True)
        sys.exit(1)


if __name__ == "__main__":
    main()
