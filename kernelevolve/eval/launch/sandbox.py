"""The candidate's process in Linux namespaces of its own (parent side, torch-free): made by util-linux `unshare`
for an exec'd process (`command`), by the forked worker itself for one the worker zygote forks (eval/launch/zygote.py,
eval/zygote/forked.py), with the same confinement from eval/launch/confine.py (`confinement`).

No network, nothing outliving the worker, nothing of the parent in sight, nothing written outside its own folders
(the shared caches through overlays, `share_trusted_writes`), no secrets, one memory limit over its process tree,
and a `sandbox` line in every result saying what held. Each of these, what is not held yet and how it degrades:
docs/harness.md ("Isolation", "Limits"); the modules: docs/architecture.md ("Modules", "The shared caches through
private overlays").
"""

from __future__ import annotations

import functools
import getpass
import os
import re
import shutil
import stat
import subprocess
import sys
import tempfile
from collections.abc import Mapping
from pathlib import Path

from kernelevolve.eval.launch import cgroup
from kernelevolve.eval.launch.confine import CANDIDATE_ID
from kernelevolve.eval.wire import Confinement
from kernelevolve.platforms.peaks import peaks_dir

PACKAGE_ROOT = str(Path(__file__).resolve().parents[3])  # the folder that holds `kernelevolve`

OFF_ENV = "KERNELEVOLVE_SANDBOX"
WRITABLE_ENV = "KERNELEVOLVE_SANDBOX_WRITABLE"
NAMESPACES = ["--net", "--ipc", "--pid", "--fork", "--kill-child", "--mount-proc"]
SECRET_NAME = re.compile(
    r"(^|_)(API_?KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIALS?|PRIVATE_KEY|ACCESS_KEY|AUTH_TOKEN)(_|$)", re.I
)


# The environment a worker, a build step or the fast check may inherit (docs/harness.md, "Isolation"): an allowlist.
ALLOWED_NAMES = frozenset(
    "PATH HOME USER LOGNAME SHELL LANG LANGUAGE TZ TERM COLUMNS TMPDIR TMP TEMP PWD VIRTUAL_ENV "
    "PYTHONPATH PYTHONHASHSEED PYTHONUNBUFFERED PYTHONDONTWRITEBYTECODE PYTHONWARNINGS "
    "LD_LIBRARY_PATH LD_PRELOAD LIBRARY_PATH CPATH C_INCLUDE_PATH CPLUS_INCLUDE_PATH PKG_CONFIG_PATH "
    "CC CXX CFLAGS CXXFLAGS LDFLAGS NVCC_PREPEND_FLAGS NVCC_APPEND_FLAGS MAX_JOBS "
    "XDG_CACHE_HOME XDG_RUNTIME_DIR".split()
)
ALLOWED_PREFIXES = (
    "LC_", "KERNELEVOLVE_", "TORCH", "TRITON_", "CUDA", "NVIDIA_", "CUBLAS", "CUDNN", "NCCL_", "HIP", "ROCM",
    "ROCR_", "HSA_", "AMD_", "OMP_", "KMP_", "GOMP_", "MKL_", "OPENBLAS_", "MALLOC_", "PYTORCH_",
)  # fmt: skip

CONFINE = ["-m", "kernelevolve.eval.launch.confine"]
# Run by the probe inside the whole sandbox: exit 0 only if its --rw folder and the cache are writable and the
# folder beside them not.
_WRITE_TEST = """
import errno, os, sys
open(os.path.join(sys.argv[1], "w"), "w").close()
open(os.path.join(sys.argv[3], "w"), "w").close()
try:
    open(os.path.join(sys.argv[2], "w"), "w").close()
except OSError as e:
    sys.exit(0 if e.errno in (errno.EROFS, errno.EACCES, errno.EPERM) else 3)
sys.exit(4)
"""
# Run by the probe with --user: exit 0 only as the unprivileged uid, with nothing under /dev but the minimal set.
_USER_TEST = """
import os, sys
from kernelevolve.eval.launch.confine import CANDIDATE_ID, device_names
sys.exit(0 if os.getuid() == CANDIDATE_ID and set(device_names(False)) <= set(os.listdir("/dev")) else 5)
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
            confined, fs_why, overlaid = _probe_file_system(cmd)
            if not confined:
                return cmd, False, made + f"; the file system is writable ({fs_why})"
            caches = " and private layers over the caches" if overlaid else "; private, empty caches (no overlayfs)"
            return cmd, True, f"{made}, a read-only file system but for its own folders{caches}, a minimal /dev"

        why = _last_line(p.stderr, p.returncode)
    return (), False, f"none: `unshare` could not make namespaces here ({why})"


def _last_line(stderr: str, code: int) -> str:
    return (stderr.strip().splitlines() or [f"exit status {code}"])[-1]


@functools.cache
def _user() -> tuple[bool, str]:
    """Whether a confined process can take the unprivileged uid of a user namespace of its own (eval/launch/
    confine.py `as_unprivileged_user`), and what the result's `sandbox` says of it."""
    namespaces = _prefix()[0] if _prefix()[1] else ()
    if not namespaces:
        return False, ""
    with tempfile.TemporaryDirectory(prefix="kernelevolve-probe-") as folder:
        cmd = [*namespaces, sys.executable, *CONFINE, "--rw", folder, "--user", "--", sys.executable, "-c", _USER_TEST]
        try:
            p = subprocess.run(cmd, capture_output=True, text=True, timeout=30, env=_python_env())
        except (OSError, subprocess.SubprocessError) as e:
            return False, f"; the worker's uid, no user namespace of its own ({e})"
    if p.returncode == 0:
        return True, f"; uid {CANDIDATE_ID} in a user namespace of its own"
    return False, f"; the worker's uid, no user namespace of its own ({_last_line(p.stderr, p.returncode)})"


def _probe_file_system(namespaces: tuple[str, ...]) -> tuple[bool, str, bool]:
    """(whether the file system is read-only but the --rw folder, why not, whether a cache's overlay held: a write
    there succeeded and stayed out of the cache)."""
    with tempfile.TemporaryDirectory(prefix="kernelevolve-probe-") as folder:
        writable, other, cache = (os.path.join(folder, name) for name in ("rw", "ro", "cache"))
        for made in (writable, other, cache):
            os.mkdir(made)
        test = [sys.executable, "-c", _WRITE_TEST, writable, other, cache]
        layer = ["--overlay", f"{cache}={os.path.join(writable, 'layer')}"]
        cmd = [*namespaces, sys.executable, *CONFINE, "--rw", writable, *layer, "--", *test]
        try:
            p = subprocess.run(cmd, capture_output=True, text=True, timeout=30, env=_python_env())
        except (OSError, subprocess.SubprocessError) as e:
            return False, str(e), False
        fell_back = os.path.isdir(os.path.join(writable, "layer", "private"))  # confine.py's empty private folder
        overlaid = not os.path.exists(os.path.join(cache, "w")) and not fell_back
    if p.returncode == 0:
        return True, "", overlaid
    return False, _last_line(p.stderr, p.returncode), False


def _python_env() -> dict[str, str]:
    """The probe's environment: the worker's (this package importable, credentials left out)."""
    return child_env({})


def shared_caches() -> list[str]:
    """The folders workers read and only trusted code fills: the measured peaks, Triton's cache and inductor's
    (made here so that they can be mounted). Compiled extensions are not among them: the harness builds those
    (eval/builds/service.py)."""
    folders = [str(peaks_dir()), inductor_cache()]
    triton_home = os.environ.get("TRITON_HOME") or os.path.expanduser("~")
    folders.append(os.environ.get("TRITON_CACHE_DIR") or os.path.join(triton_home, ".triton"))
    for folder in folders:
        os.makedirs(folder, exist_ok=True)
    return folders


def _overlays(private_tmp: str) -> list[tuple[str, str]]:
    """Each shared cache and the folder, in the worker's private one, that holds its writes (eval/launch/confine.py)."""
    return [(folder, os.path.join(private_tmp, ".caches", str(i))) for i, folder in enumerate(shared_caches())]


def share_trusted_writes(private_tmp: str) -> int:
    """Copy what a worker wrote into the shared caches so far into them; returns the number of files. Called by
    the evaluator while the worker waits at the end of its trusted phase (the problem, its inputs, the references,
    the torch.compile baseline, the peaks: eval/worker/harness.py), before any candidate code exists in it; what
    the worker writes afterwards stays in its private folder and goes with it."""
    shared = 0
    for lower, base in _overlays(private_tmp):
        upper = os.path.join(base, "upper")
        for root, _dirs, files in os.walk(upper):
            target_dir = os.path.join(lower, os.path.relpath(root, upper))
            for name in files:
                source = os.path.join(root, name)
                if not stat.S_ISREG(os.lstat(source).st_mode):  # a whiteout (a deletion), a link: not shared
                    continue
                os.makedirs(target_dir, exist_ok=True)
                fd, tmp = tempfile.mkstemp(dir=target_dir, prefix=".kernelevolve-")
                with os.fdopen(fd, "wb") as out, open(source, "rb") as src:
                    shutil.copyfileobj(src, out)
                os.replace(tmp, os.path.join(target_dir, name))
                shared += 1
    return shared


def inductor_cache() -> str:
    """Inductor's cache where torch puts it by default; set explicitly for a worker, whose TMPDIR is private."""
    try:
        user = getpass.getuser()
    except (KeyError, OSError):  # a uid without a name (containers)
        user = str(os.getuid())
    return os.environ.get("TORCHINDUCTOR_CACHE_DIR") or os.path.join(tempfile.gettempdir(), f"torchinductor_{user}")


def confinement(
    private_tmp: str | None, cage: str | None = None, writable: list[str] | None = None, gpu: bool = False
) -> Confinement | None:
    """What confines a process in the sandbox (eval/launch/confine.py): read-only but for private_tmp and
    `writable`, in the memory cgroup `cage` (eval/launch/cgroup.py) if given, a minimal /dev (with the GPU's nodes
    where `gpu`), the unprivileged uid of a user namespace of its own where this machine makes one; None where the
    file system cannot be confined. Without `writable` (a worker) it sees the shared caches through overlays whose
    writes stay in private_tmp."""
    if not confines_files() or private_tmp is None:
        return None
    if writable is None:  # a worker
        writable, overlays = extra_writable(), _overlays(private_tmp)
    else:
        overlays = []
    return Confinement((private_tmp, *writable), tuple(overlays), (cage,) if cage else (), gpu, _user()[0])


def command(
    cmd: list[str],
    private_tmp: str | None,
    cage: str | None = None,
    writable: list[str] | None = None,
    gpu: bool = False,
) -> list[str]:
    """`cmd` in the sandbox: its namespaces, and where the file system can be confined, `confinement`'s (cmd as it
    is where there is no sandbox)."""
    namespaces = prefix()
    if not namespaces:
        return list(cmd)
    confined = confinement(private_tmp, cage, writable, gpu)
    if confined is None:
        return [*namespaces, *cmd]
    return [*namespaces, sys.executable, *CONFINE, *confined.args(), "--", *cmd]


def extra_writable() -> list[str]:
    """Folders the user leaves writable to candidates (KERNELEVOLVE_SANDBOX_WRITABLE, separated by os.pathsep): a
    scratch folder to debug with, or a test's proof that code in the sandbox ran."""
    raw = os.environ.get(WRITABLE_ENV, "")
    return [folder for folder in raw.split(os.pathsep) if folder and os.path.isdir(folder)]


def prefix() -> list[str]:
    """The namespaces' command line ([] where there are none)."""
    return list(_prefix()[0])


def confines_files() -> bool:
    return _prefix()[1]


def zygote_prefix() -> list[str]:
    """The command line that starts the worker zygote (eval/launch/zygote.py) where workers get namespaces: a network
    namespace of its own with no network, inside a user namespace where the workers' are (not root), so that it
    holds the capabilities to make each worker's namespaces; [] where there are none."""
    namespaces = prefix()
    if not namespaces:
        return []
    user = ["--user", "--map-root-user"] if "--user" in namespaces else []
    return [namespaces[0], *user, "--net"]


def describe(memory_limited: bool = False, in_judge: bool = False) -> str:
    """What confines candidates on this machine, for every result: 'network, PID and /proc namespaces, ...' or
    'none: why'; memory_limited (the cpu target's workers): how their memory limit holds; in_judge: a GPU target
    told to run the candidate in the judge's process, which every result then says."""
    made = _prefix()[2] + _user()[1]
    if confines_files() and extra_writable():
        made += f"; writable to it by {WRITABLE_ENV}: {', '.join(extra_writable())}"
    if memory_limited and confines_files():
        made = f"{made}; {cgroup.describe()}"
    if in_judge:
        made += "; the candidate in the judge's process (KERNELEVOLVE_GPU_JUDGE=in-process)"
    return made


def scrubbed(env: Mapping[str, str]) -> dict[str, str]:
    """The environment a process that runs candidate code gets: only the variables on the allowlist (what Python,
    torch, Triton, the compilers, the GPU stack and the harness read), and of those none whose name looks like a
    credential. Anything else (a proxy's or a database's password, a cloud key under a name of its own) stays out."""
    return {k: v for k, v in env.items() if _allowed(k) and not SECRET_NAME.search(k)}


def _allowed(name: str) -> bool:
    return name in ALLOWED_NAMES or name.startswith(ALLOWED_PREFIXES)


def child_env(extra: Mapping[str, str]) -> dict[str, str]:
    """This process's environment without credentials (`scrubbed`), with `extra` (a platform's worker
    environment) on top, and the package root first on PYTHONPATH so that `python -m kernelevolve...` finds this
    checkout."""
    env = {**scrubbed(os.environ), **extra}
    env["PYTHONPATH"] = os.pathsep.join(p for p in (PACKAGE_ROOT, env.get("PYTHONPATH")) if p)
    return env
