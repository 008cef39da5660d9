"""The build step (`python -m kernelevolve.eval.builds.step [--header] FOLDER`, request on stdin): torch's own build
of one extension request into FOLDER, or with --header torch's header precompiled for a request's flags, started
by the parent's build service (eval/builds/service.py) in the sandbox with only FOLDER and a private temporary folder
writable. The candidate's Python never runs here and the built library is
never imported (its static initialisers do not run), but the request's flags are the candidate's and reach the
compiler, so this step is confined as the candidate is, and the parent checks what it leaves.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from kernelevolve.eval.builds.extension_cache import build_header, build_into


def main() -> None:
    header = sys.argv[1:2] == ["--header"]
    folder = Path(sys.argv[-1])
    request = json.loads(sys.stdin.read())
    try:
        why = build_header(request, folder) if header else build_into(request, folder)
    except Exception as e:  # noqa: BLE001 - the compiler's output, for the candidate's compile error
        why = f"{type(e).__name__}: {e}"
    if why:
        print(why, file=sys.stderr, flush=True)
        sys.exit(1)


if __name__ == "__main__":
    main()
