"""The candidate's process in Linux namespaces of its own, made by util-linux `unshare` (parent side, torch-free).

- **No network**: a network namespace holding only a loopback that is down.
- **Nothing outlives it**: a PID namespace whose init is the worker; when the worker exits or is killed, the kernel
  kills every process left in it (a double-forked, `setsid` daemon too).
- **Nothing of the parent in sight**: the namespace's own /proc, so the parent's and other workers' environments,
  file descriptors and pipes are not reachable through /proc.
- **No secrets**: environment variables that look like credentials (API keys, tokens, passwords) are not passed.

Not yet: a read-only file system with the runs directory, the store and the caches out of sight, and a memory limit
over the whole process tree (the cpu worker caps its own address space). As root the namespaces are made directly;
otherwise inside a user namespace. Where neither works (no `unshare`, user namespaces disabled), the worker runs
without them and every result says so (`sandbox`); `KERNELEVOLVE_SANDBOX=off` turns them off.
"""

from __future__ import annotations

import functools
import os
import re
import shutil
import subprocess
from collections.abc import Mapping

OFF_ENV = "KERNELEVOLVE_SANDBOX"
NAMESPACES = ["--net", "--pid", "--fork", "--kill-child", "--mount-proc"]
SECRET_NAME = re.compile(
    r"(^|_)(API_?KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIALS?|PRIVATE_KEY|ACCESS_KEY|AUTH_TOKEN)(_|$)", re.I
)


@functools.cache
def _prefix() -> tuple[tuple[str, ...], str]:
    if os.environ.get(OFF_ENV, "").strip().lower() in ("0", "off", "no", "false"):
        return (), f"none: {OFF_ENV}=off"
    exe = shutil.which("unshare")
    if exe is None:
        return (), "none: util-linux `unshare` is not installed"
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
            return cmd, made
        why = (p.stderr.strip().splitlines() or [f"exit status {p.returncode}"])[-1]
    return (), f"none: `unshare` could not make namespaces here ({why})"


def prefix() -> list[str]:
    """The command line that starts a program in the sandbox ([] where there is none)."""
    return list(_prefix()[0])


def describe() -> str:
    """What confines candidates on this machine, for every result: 'network, PID and /proc namespaces' or
    'none: why'."""
    return _prefix()[1]


def scrubbed(env: Mapping[str, str]) -> dict[str, str]:
    """The environment without variables whose names look like credentials."""
    return {k: v for k, v in env.items() if not SECRET_NAME.search(k)}
