"""The candidate's process in Linux namespaces of its own, made by util-linux `unshare` (parent side, torch-free).

- **No network**: a network namespace holding only a loopback that is down.
- **Nothing outlives it**: a PID namespace whose init is the worker; when the worker exits or is killed, the kernel
  kills every process left in it (a double-forked, `setsid` daemon too).
- **Nothing of the parent in sight**: the namespace's own /proc, so the parent's and other workers' environments,
  file descriptors and pipes are not reachable through /proc.
- **Nothing written outside its own folders**: in its own mount namespace every mount is read-only (the store,
  the run directories, the problem files, the package: eval/confine.py), except a private temporary folder made
  for each process (its TMPDIR, removed when it is reaped), a private /dev/shm, and the caches the worker fills
  (the measured peaks, Triton's and inductor's caches). Compiled extensions are read-only: the harness builds
  them in a step of its own (eval/builds.py). Its capabilities are dropped, so it cannot remount.
- **No secrets**: environment variables that look like credentials (API keys, tokens, passwords) are not passed.

- **One memory limit over its process tree** (cpu target): a memory cgroup per worker (eval/cgroup.py) where this
  machine lets us make one; the worker also caps each process's address space.

Not yet: Triton's and inductor's caches are writable, and so shared between candidates; everything stays readable.
As root the namespaces are made directly; otherwise inside a user namespace. Where they cannot be made (no
`unshare`, user namespaces disabled), the worker runs without them, and where the file system cannot be made
read-only it runs writable; every result says which (`sandbox`). `KERNELEVOLVE_SANDBOX=off` turns it all off.
"""

from __future__ import annotations

import functools
import getpass
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Mapping

from kernelevolve.eval import cgroup
from kernelevolve.platforms.peaks import peaks_dir

OFF_ENV = "KERNELEVOLVE_SANDBOX"
NAMESPACES = ["--net", "--pid", "--fork", "--kill-child", "--mount-proc"]
SECRET_NAME = re.compile(
    r"(^|_)(API_?KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIALS?|PRIVATE_KEY|ACCESS_KEY|AUTH_TOKEN)(_|$)", re.I
)


CONFINE = ["-m", "kernelevolve.eval.confine"]
# Run by the probe inside the whole sandbox: exit 0 only if its --rw folder is writable and the one beside it not.
_WRITE_TEST = """
import errno, os, sys
open(os.path.join(sys.argv[1], "w"), "w").close()
try:
    open(os.path.join(sys.argv[2], "w"), "w").close()
except OSError as e:
    sys.exit(0 if e.errno in (errno.EROFS, errno.EACCES, errno.EPERM) else 3)
sys.exit(4)
"""


@functools.cache
def _prefix() -> tuple[tuple[str, ...], bool, str]:
    """The namespaces' command line, whether the file system can be confined under it, and what confines."""
    if os.environ.get(OFF_ENV, "").strip().lower() in ("0", "off", "no", "false"):
        return (), False, f"none: {OFF_ENV}=off"
    exe = shutil.which("unshare")
    if exe is None:
        return (), False, "none: util-linux `unshare` is not installed"
    why = ""
    for user in ([], ["--user", "--map-root-user"]):
        cmd = (exe, *user, *NAMESPACES)
        try:
            p = subprocess.run([*cmd, "true"], capture_output=True, text=True, timeout=20)
        except (OSError, subprocess.SubprocessError) as e:
            why = str(e)
            continue
        if p.returncode == 0:
            made = "network, PID and /proc namespaces" + (" in a user namespace" if user else "")
            confined, fs_why = _probe_file_system(cmd)
            if confined:
                return cmd, True, made + ", a read-only file system but for its own folders and the caches"
            return cmd, False, made + f"; the file system is writable ({fs_why})"
        why = _last_line(p.stderr, p.returncode)
    return (), False, f"none: `unshare` could not make namespaces here ({why})"


def _last_line(stderr: str, code: int) -> str:
    return (stderr.strip().splitlines() or [f"exit status {code}"])[-1]


def _probe_file_system(namespaces: tuple[str, ...]) -> tuple[bool, str]:
    with tempfile.TemporaryDirectory(prefix="kernelevolve-probe-") as folder:
        writable, other = os.path.join(folder, "rw"), os.path.join(folder, "ro")
        os.mkdir(writable)
        os.mkdir(other)
        test = [sys.executable, "-c", _WRITE_TEST, writable, other]
        cmd = [*namespaces, sys.executable, *CONFINE, "--rw", writable, "--", *test]
        try:
            p = subprocess.run(cmd, capture_output=True, text=True, timeout=30, env=_python_env())
        except (OSError, subprocess.SubprocessError) as e:
            return False, str(e)
    if p.returncode == 0:
        return True, ""
    return False, _last_line(p.stderr, p.returncode)


def _python_env() -> dict[str, str]:
    """The probe's environment: the worker's (this package importable, credentials left out)."""
    from kernelevolve.eval import spawn  # spawn starts processes in this sandbox: imported here, not above

    return spawn.child_env({})


def writable_caches() -> list[str]:
    """The folders a worker fills and later workers read: the measured peaks, Triton's cache and inductor's (made
    here so that they can be bound writable). Compiled extensions are not among them: the harness builds those
    (eval/builds.py) and candidates only load them."""
    folders = [str(peaks_dir()), inductor_cache()]
    triton_home = os.environ.get("TRITON_HOME") or os.path.expanduser("~")
    folders.append(os.environ.get("TRITON_CACHE_DIR") or os.path.join(triton_home, ".triton"))
    for folder in folders:
        os.makedirs(folder, exist_ok=True)
    return folders


def inductor_cache() -> str:
    """Inductor's cache where torch puts it by default; set explicitly for a worker, whose TMPDIR is private."""
    try:
        user = getpass.getuser()
    except (KeyError, OSError):  # a uid without a name (containers)
        user = str(os.getuid())
    return os.environ.get("TORCHINDUCTOR_CACHE_DIR") or os.path.join(tempfile.gettempdir(), f"torchinductor_{user}")


def command(
    cmd: list[str], private_tmp: str | None, cage: str | None = None, writable: list[str] | None = None
) -> list[str]:
    """`cmd` in the sandbox: its namespaces, and where the file system can be confined, read-only but for
    private_tmp and `writable` (default: the caches a worker fills), in the memory cgroup `cage` (eval/cgroup.py)
    if given (cmd as it is where there is no sandbox)."""
    namespaces, confined, _ = _prefix()
    if not namespaces:
        return list(cmd)
    if not confined or private_tmp is None:
        return [*namespaces, *cmd]
    folders = [private_tmp, *(writable_caches() if writable is None else writable)]
    rw = [arg for folder in folders for arg in ("--rw", folder)]
    caged = ["--cgroup", cage] if cage else []
    return [*namespaces, sys.executable, *CONFINE, *caged, *rw, "--", *cmd]


def prefix() -> list[str]:
    """The namespaces' command line ([] where there are none)."""
    return list(_prefix()[0])


def confines_files() -> bool:
    return _prefix()[1]


def describe(memory_limited: bool = False) -> str:
    """What confines candidates on this machine, for every result: 'network, PID and /proc namespaces, ...' or
    'none: why'; memory_limited (the cpu target's workers): how their memory limit holds."""
    made = _prefix()[2]
    if memory_limited and confines_files():
        return f"{made}; {cgroup.describe()}"
    return made


def scrubbed(env: Mapping[str, str]) -> dict[str, str]:
    """The environment without variables whose names look like credentials."""
    return {k: v for k, v in env.items() if not SECRET_NAME.search(k)}
