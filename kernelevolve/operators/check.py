"""The agent's fast check: does the file parse, import and build (C++/CUDA extensions), without timing?

Runs in its own process group under a timeout, like any candidate code: on timeout the whole group is killed,
a compiler the import started (ninja, g++, nvcc) included. Triton kernels compile at their first launch, so their
compile errors show in the evaluation, not here.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from pathlib import Path

from kernelevolve.eval.builds.service import BuildService, Channel
from kernelevolve.eval.launch import sandbox, spawn
from kernelevolve.eval.redact import redact
from kernelevolve.platforms import get_platform


def fast_check(source: str, target: str, timeout_s: float = 180.0) -> str:
    """'ok: ...' or what failed, worded for the model."""
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "kernel.py"
        path.write_text(source)
        platform_env = get_platform(target).worker_env()
        builds = Channel(BuildService(timeout_s=timeout_s, env=platform_env))  # its extensions: built by the harness
        env = {**sandbox.child_env(platform_env), **builds.child_env()}
        cmd = [sys.executable, "-m", "kernelevolve.operators.check", str(path)]

        def serve(proc: subprocess.Popen) -> None:
            builds.serve(alive=lambda: proc.poll() is None)

        try:
            p = spawn.run(cmd, timeout_s=timeout_s, env=env, pass_fds=builds.child_fds(), on_start=serve)
        except BaseException:
            builds.close()
            raise
        if p is None:
            return f"check failed: importing the file took more than {timeout_s:g} s"
        # What the file printed reaches the model: credentials out (eval/redact.py), as from an evaluation.
        lines = [ln for ln in p.stdout.splitlines() if ln.startswith("{")]
        if p.returncode == 0 and lines:
            return redact(str(json.loads(lines[-1])["message"]))
        tail = (p.stderr or p.stdout)[-1500:]
        return redact(f"check failed: the checking process exited with status {p.returncode}:\n{tail}")


def _main(path: str) -> None:
    from kernelevolve.eval.builds import extension_cache
    from kernelevolve.problem.candidate import CandidateLoadError, detect_languages, load_candidate

    extension_cache.install(channel=extension_cache.take_channel())
    source = Path(path).read_text()
    try:
        load_candidate(path)
        message = f"ok: the file parses, imports and builds ({', '.join(detect_languages(source))}); not yet run"
    except CandidateLoadError as e:
        message = f"check failed: {e}"
    print(json.dumps({"message": message}), flush=True)


if __name__ == "__main__":
    _main(sys.argv[1])
