"""A compiler whose whole process group dies when it exits: `python -m kernelevolve.eval.builds.reaper COMPILER
ARGS...` runs the compiler in a process group of its own, its output into a file rather than a pipe, and kills
the group once the compiler has exited; then it writes that output and exits as the compiler did. The build step
(eval/builds/step.py) puts it in front of every compiler torch's build file runs, and runs torch's header build
through `run`: a child the compiler left behind (a program a flag started, a daemon) holds neither the build's
pipes nor the build till its deadline. One that left the group (setsid) dies with the build step's PID namespace
where the sandbox makes one. docs/harness.md ("Isolation").
"""

from __future__ import annotations

import os
import shlex
import signal
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

COMPILER_VARIABLES = ("cxx", "nvcc")  # the build file's variables that name a compiler (the link rule uses cxx)


def run(cmd: Sequence[str], stdin: bytes | None = None, cwd: str | None = None) -> tuple[int, bytes]:
    """(the compiler's exit status, what it wrote on stdout and stderr); its process group is killed once it has
    exited."""
    with tempfile.TemporaryFile() as out:
        proc = subprocess.Popen(
            list(cmd),
            cwd=cwd,
            stdin=subprocess.PIPE if stdin is not None else subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        try:
            if proc.stdin is not None:
                try:
                    proc.stdin.write(stdin or b"")
                    proc.stdin.close()
                except BrokenPipeError:
                    pass
            code = proc.wait()
        finally:
            try:
                os.killpg(proc.pid, signal.SIGKILL)  # what is left of its group: the compiler itself is gone
            except (ProcessLookupError, PermissionError):
                pass
            proc.wait()
        out.seek(0)
        return code, out.read()


def wrap_build_file(folder: str) -> None:
    """Put this module in front of each compiler torch's build file in folder names."""
    build_file = Path(folder) / "build.ninja"
    prefix = " ".join(shlex.quote(part) for part in (sys.executable, "-m", __name__)).replace("$", "$$")
    lines = []
    for line in build_file.read_text().splitlines():
        name, eq, value = line.partition(" = ")
        if eq and name in COMPILER_VARIABLES and not value.startswith(prefix):
            line = f"{name} = {prefix} {value}"
        lines.append(line)
    build_file.write_text("\n".join(lines) + "\n")


def main() -> None:
    if len(sys.argv) < 2:
        sys.exit("usage: python -m kernelevolve.eval.builds.reaper COMPILER ARGS...")
    code, output = run(sys.argv[1:])
    sys.stdout.buffer.write(output)
    sys.stdout.flush()
    sys.exit(code)


if __name__ == "__main__":
    main()
