"""The process boundary: the parent side of eval/ imports no torch, and the one launcher of processes that run
candidate code (eval/launch/spawn.py) kills the whole process group on a timeout, so a compiler or any other process the
candidate started dies with it."""

from __future__ import annotations

import os
import signal
import stat
import subprocess
import sys
import textwrap
import time
from pathlib import Path

from kernelevolve.eval.launch import sandbox, spawn
from kernelevolve.operators.check import fast_check


def _stopped(beat: Path, wait_s: float = 10.0) -> bool:
    """Whether the process writing `beat` every 0.1 s has stopped (it may live in a PID namespace of its own, where
    its pid means nothing here): the file unchanged for a second, polled up to wait_s."""
    deadline = time.monotonic() + wait_s
    while time.monotonic() < deadline:
        before = beat.read_text()
        time.sleep(1.0)
        if beat.read_text() == before:
            return True
    return False


def _spawns_and_hangs(beat: Path) -> str:
    """Python source that starts a grandchild (a shell loop, standing in for ninja or nvcc) that writes a counter to
    `beat` every 0.1 s, then hangs."""
    loop = f"i=0; while true; do i=$((i+1)); echo $i > {beat}; sleep 0.1; done"
    return textwrap.dedent(
        f"""
        import subprocess, time
        child = subprocess.Popen(["sh", "-c", {loop!r}])
        time.sleep(600)
        """
    )


def test_the_parent_side_imports_no_torch():
    # What the parent (CLI, search, bench) imports from eval/, and the worker package itself, which must stay empty.
    modules = [
        "kernelevolve.eval.evaluator",
        "kernelevolve.eval.probes",
        "kernelevolve.eval.launch.spawn",
        "kernelevolve.eval.launch.sandbox",
        "kernelevolve.eval.environment",
        "kernelevolve.eval.worker",
        "kernelevolve.problem.candidate",
        "kernelevolve.operators.check",
    ]
    code = f"import importlib, sys; [importlib.import_module(m) for m in {modules!r}]; print('torch' in sys.modules)"
    p = spawn.run([sys.executable, "-c", code], timeout_s=120, env=sandbox.child_env({}))
    assert p is not None and p.returncode == 0, p and p.stderr
    assert p.stdout.strip() == "False"


def test_run_returns_the_output_and_status():
    code = "import sys; print('out'); print('err', file=sys.stderr); sys.exit(3)"
    p = spawn.run([sys.executable, "-c", code], timeout_s=60, env=sandbox.child_env({}))
    assert p is not None and p.returncode == 3
    assert p.stdout == "out\n" and p.stderr == "err\n"


def test_child_env_puts_the_package_first_on_pythonpath(monkeypatch):
    monkeypatch.setenv("PYTHONPATH", "/elsewhere")
    env = sandbox.child_env({"EXTRA": "1"})
    assert env["PYTHONPATH"].split(os.pathsep) == [sandbox.PACKAGE_ROOT, "/elsewhere"]
    assert env["EXTRA"] == "1" and (Path(sandbox.PACKAGE_ROOT) / "kernelevolve").is_dir()


def test_run_kills_the_whole_process_group_on_timeout(sandbox_writable):
    beat = sandbox_writable / "grandchild.beat"
    t0 = time.monotonic()
    p = spawn.run([sys.executable, "-c", _spawns_and_hangs(beat)], timeout_s=3, env=sandbox.child_env({}))
    assert p is None and time.monotonic() - t0 < 30
    assert beat.is_file(), "the child never started its grandchild"
    assert _stopped(beat), "the grandchild survived the timeout"


def test_fast_check_kills_a_process_the_import_left_running(sandbox_writable):
    """The agent's CHECK imports the file in its own process: on timeout, a process that the import started (a
    compiler, here `sleep 60`) is killed too, not left running."""
    beat = sandbox_writable / "grandchild.beat"
    message = fast_check(_spawns_and_hangs(beat), "cpu", timeout_s=8)
    assert message == "check failed: importing the file took more than 8 s"
    assert beat.is_file(), "the check process had not reached the file's code within 8 s (torch's import and more)"
    assert _stopped(beat), "the grandchild survived the check's timeout"


def test_removing_a_private_folder_never_changes_the_modes_of_its_parent(tmp_path, monkeypatch):
    """The folder's own removal may fail once (a process of the worker's still writing there): the retry resets
    the modes of the folder and what lies in it, never its parent's (that was /tmp, left at 0700)."""
    parent = tmp_path / "tmp"
    folder = parent / "private"
    (folder / "overlay" / "work").mkdir(parents=True)
    (folder / "overlay" / "work").chmod(0)  # as overlayfs leaves its work folder
    parent.chmod(0o755)
    real_rmdir, failed = os.rmdir, []

    def rmdir_failing_once(path, *args, **kwargs):
        if str(path) == str(folder) and not failed:
            failed.append(path)
            raise PermissionError(13, "Permission denied", str(path))
        return real_rmdir(path, *args, **kwargs)

    monkeypatch.setattr(os, "rmdir", rmdir_failing_once)
    spawn._remove(str(folder))
    assert failed, "the folder's own removal never failed: the test did not reach the retry"
    assert not folder.exists()
    assert stat.S_IMODE(parent.stat().st_mode) == 0o755


def test_a_process_tree_is_read_whole_and_its_exit_seen(sandbox_writable):
    """What a GPU evaluation waits for after a kill: every process of the worker's tree, until each has exited (a
    zombie has); a pid used again by another process is not taken for the one that had it."""
    p = subprocess.Popen(["sh", "-c", "sleep 30 & sleep 30 & wait"], start_new_session=True)
    try:
        deadline = time.monotonic() + 10
        while len(tree := spawn.process_tree(p.pid)) < 3 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert len(tree) == 3 and p.pid in tree, tree
        assert spawn.exiting(tree) == tree
        assert spawn.exiting({p.pid: tree[p.pid] + 1}) == {}  # another process's start time: not this one
    finally:
        os.killpg(p.pid, signal.SIGKILL)
        p.wait()
    deadline = time.monotonic() + 10
    while spawn.exiting(tree) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert spawn.exiting(tree) == {}


def test_the_candidates_environment_is_an_allowlist():
    from kernelevolve.eval.launch import sandbox

    env = {
        "PATH": "/usr/bin", "CUDA_VISIBLE_DEVICES": "0", "OMP_NUM_THREADS": "1", "KERNELEVOLVE_CACHE": "/c",
        "TORCHINDUCTOR_CACHE_DIR": "/t", "LC_ALL": "C", "AZURE_OPENAI_KEY": "k", "PGPASSWORD": "p",
        "HTTPS_PROXY": "http://u:p@h", "DATABASE_URL": "postgresql://u:p@h/db", "KERNELEVOLVE_LLM_API_KEY": "k",
    }  # fmt: skip
    assert sorted(sandbox.scrubbed(env)) == [
        "CUDA_VISIBLE_DEVICES", "KERNELEVOLVE_CACHE", "LC_ALL", "OMP_NUM_THREADS", "PATH", "TORCHINDUCTOR_CACHE_DIR",
    ]  # fmt: skip


def test_the_fast_check_redacts_credentials_the_file_printed():
    """The file's own error reaches the model through the fast check: credentials out, as from an evaluation."""
    from kernelevolve.operators.check import fast_check

    message = fast_check('raise RuntimeError("AZURE_OPENAI_KEY=azure-secret-1234")\n', "cpu", timeout_s=60)
    assert message.startswith("check failed") and "AZURE_OPENAI_KEY=[redacted]" in message
    assert "azure-secret-1234" not in message
