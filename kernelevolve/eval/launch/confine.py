"""The candidate's confinement inside its namespaces, one implementation for both ways a worker starts: make the
file system read-only except the folders the worker must write, join its memory cgroup, drop every capability and
check that they are gone (torch-free).

Exec'd (eval/launch/sandbox.py `command`): `python -m kernelevolve.eval.launch.confine [--cgroup DIR] --rw DIR
[--rw DIR ...] [--overlay DIR=BASE ...] -- COMMAND...` runs as the first process of the namespaces `unshare` made,
confines itself and execs COMMAND. Forked (eval/zygote/forked.py): the worker calls the same functions on itself.

What it guarantees: docs/harness.md ("Isolation"); each step, and exit status 97 where it cannot confine:
docs/architecture.md ("Modules", `confine.py`).
"""

from __future__ import annotations

import ctypes
import os
import shutil
import subprocess
import sys

from kernelevolve.eval.wire import Confinement

MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC = 1, 2, 4, 8
MS_REMOUNT, MS_NOATIME, MS_NODIRATIME, MS_BIND, MS_REC = 32, 1024, 2048, 4096, 16384
MS_MOVE, MS_PRIVATE, MS_RELATIME, MS_STRICTATIME = 8192, 1 << 18, 1 << 21, 1 << 24
# A mount's own options that a read-only remount must repeat (a user namespace may not clear them: "locked").
KEPT = {
    "nosuid": MS_NOSUID,
    "nodev": MS_NODEV,
    "noexec": MS_NOEXEC,
    "noatime": MS_NOATIME,
    "nodiratime": MS_NODIRATIME,
    "relatime": MS_RELATIME,
    "strictatime": MS_STRICTATIME,
}
LEFT_WRITABLE = ("/dev", "/proc")  # its own minimal /dev (read-only but /dev/shm); its own /proc (/proc/sys read-only)
# The device nodes a confined process sees (`minimal_dev`): these, and on GPU targets the GPU's that exist.
DEVICES = ("null", "zero", "full", "random", "urandom")
GPU_DEVICES = (
    "nvidia",
    "dri",
    "kfd",
)  # /dev/nvidia* (nvidia0, nvidiactl, nvidia-uvm, nvidia-caps/), /dev/dri, /dev/kfd
DEV_LINKS = {
    "fd": "/proc/self/fd",
    "stdin": "/proc/self/fd/0",
    "stdout": "/proc/self/fd/1",
    "stderr": "/proc/self/fd/2",
}
# Where a home folder keeps credentials (tools' own stores: ssh, cloud CLIs, registries, package indexes, model
# providers' CLIs, databases): each hidden under an empty read-only folder or /dev/null in the sandbox
# (`hide_credentials`), so a candidate cannot print what it cannot read (docs/harness.md, "Isolation").
CREDENTIAL_STORES = (
    ".ssh .gnupg .password-store .netrc .git-credentials .aws .azure .config/gcloud .config/gh .config/hub .docker "
    ".kube .npmrc .yarnrc .pypirc .gem/credentials .cargo/credentials .cargo/credentials.toml .m2/settings.xml "
    ".gradle/gradle.properties .pgpass .my.cnf .boto .s3cfg .config/rclone .databrickscfg .terraform.d "
    ".vault-token .huggingface .cache/huggingface/token .config/huggingface .netrc .wandb .config/wandb .claude "
    ".claude.json .codex .anthropic .openai .config/openai .config/anthropic .local/share/keyrings .config/gh-copilot"
).split()
# The uid and gid the candidate's process takes in a user namespace of its own (`as_unprivileged_user`).
CANDIDATE_ID = 65534
CLONE_NEWUSER = 0x10000000
CANNOT_CONFINE = 97

PR_CAPBSET_DROP, PR_SET_NO_NEW_PRIVS, PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL = 24, 38, 47, 4
_LINUX_CAPABILITY_VERSION_3 = 0x20080522
CAP_FIELDS = ("CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb")

_libc = ctypes.CDLL(None, use_errno=True)
_libc.mount.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_ulong, ctypes.c_char_p]
_libc.prctl.argtypes = [ctypes.c_int, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong]


class _CapHeader(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]


class _CapData(ctypes.Structure):
    _fields_ = [("effective", ctypes.c_uint32), ("permitted", ctypes.c_uint32), ("inheritable", ctypes.c_uint32)]


def _bytes(text: str | None) -> bytes | None:
    return text.encode() if text is not None else None


def _mount(source: str | None, target: str, fstype: str | None, flags: int, data: str | None = None) -> None:
    if _libc.mount(_bytes(source), _bytes(target), _bytes(fstype), flags, _bytes(data)) != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"mount {target}: {os.strerror(err)}")


def _prctl(option: int, arg: int = 0) -> None:
    if _libc.prctl(option, arg, 0, 0, 0) != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"prctl {option}: {os.strerror(err)}")


def make_mounts_private() -> None:
    """Every mount of a new mount namespace private, recursively (what `unshare` does by default): nothing mounted
    here then propagates back to the host's namespace."""
    _mount(None, "/", None, MS_REC | MS_PRIVATE)


def mount_proc() -> None:
    """A /proc of this process's PID namespace over the host's (`unshare --mount-proc`)."""
    _mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC)


def _unescape(field: str) -> str:
    """mountinfo writes space, tab, newline and backslash as octal escapes."""
    for code in ("\\040", "\\011", "\\012", "\\134"):
        field = field.replace(code, chr(int(code[1:], 8)))
    return field


def mounts() -> list[tuple[str, int]]:
    """(mount point, the per-mount flags to keep) of every mount this process sees, parents before children."""
    found = []
    with open("/proc/self/mountinfo") as f:
        for line in f:
            fields = line.split()
            if len(fields) < 6:
                continue
            flags = 0
            for opt in fields[5].split(","):
                flags |= KEPT.get(opt, 0)
            found.append((_unescape(fields[4]), flags))
    return found


def _under(path: str, roots: tuple[str, ...]) -> bool:
    return any(path == r or path.startswith(r.rstrip("/") + "/") for r in roots)


def overlay(lower: str, base: str) -> None:
    """`lower` seen through a private overlay: its contents readable, writes kept in base/upper (this process's own
    folder), the folder itself untouched."""
    if any(c in lower + base for c in ",:\\"):
        raise OSError(0, f"overlay {lower}: a comma, colon or backslash in the path")
    upper, work = os.path.join(base, "upper"), os.path.join(base, "work")
    os.makedirs(upper, exist_ok=True)
    os.makedirs(work, exist_ok=True)
    options = f"lowerdir={lower},upperdir={upper},workdir={work}"
    try:
        _mount("overlay", lower, "overlay", 0, options)
    except OSError:
        _mount("overlay", lower, "overlay", 0, options + ",userxattr")  # inside a user namespace


def device_names(gpu: bool) -> list[str]:
    """The names under the host's /dev that a confined process gets: DEVICES, and with gpu those GPU_DEVICES begin
    with (as present)."""
    names = [name for name in DEVICES if os.path.exists(os.path.join("/dev", name))]
    if gpu:
        names += sorted(name for name in os.listdir("/dev") if name.startswith(GPU_DEVICES))
    return names


def _make_uvm_node() -> None:
    """/dev/nvidia-uvm, which CUDA has nvidia-modprobe make at its first use, made now while the host's /dev is in
    sight (the minimal one is read-only); best effort: where it cannot be, CUDA in the worker says so."""
    if os.path.exists("/dev/nvidiactl") and not os.path.exists("/dev/nvidia-uvm"):
        exe = shutil.which("nvidia-modprobe")
        if exe:
            subprocess.run([exe, "-u", "-c=0"], capture_output=True, timeout=30, check=False)


def minimal_dev(stage: str, gpu: bool) -> None:
    """Replace /dev with a read-only tmpfs that holds only `device_names` (each the host's node, bind-mounted: no
    node is made), the usual links into /proc/self/fd and a private, writable /dev/shm: no disk, loop or console
    device, nothing a write under the read-only mounts could go through. stage: an empty folder to build it in."""
    if gpu:
        _make_uvm_node()
    os.makedirs(stage, exist_ok=True)
    _mount("tmpfs", stage, "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC, "mode=0755,size=64k")
    for name in device_names(gpu):
        source, target = os.path.join("/dev", name), os.path.join(stage, name)
        if os.path.isdir(source):
            os.mkdir(target)
        else:
            open(target, "w").close()  # noqa: SIM115 - a mount point, closed at once
        _mount(source, target, None, MS_BIND | MS_REC)
    for name, points_to in DEV_LINKS.items():
        os.symlink(points_to, os.path.join(stage, name))
    os.mkdir(os.path.join(stage, "shm"))
    _mount(stage, "/dev", None, MS_MOVE)
    os.rmdir(stage)
    _mount("tmpfs", "/dev/shm", "tmpfs", MS_NOSUID | MS_NODEV, "mode=1777")
    _mount(None, "/dev", None, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC)


def homes() -> list[str]:
    """The home folders whose CREDENTIAL_STORES are hidden: $HOME's and this user's (as the passwd file says)."""
    import pwd

    found = [os.environ.get("HOME", "")]
    try:
        found.append(pwd.getpwuid(os.getuid()).pw_dir)
    except KeyError:
        pass
    return sorted({os.path.realpath(h) for h in found if h and os.path.isabs(h)})


def hide_credentials(writable: list[str]) -> list[str]:
    """Every CREDENTIAL_STORES entry of `homes` that exists covered: a folder by an empty tmpfs, a file by /dev/null
    (both made read-only with the rest); none under a writable folder. Returns the paths hidden."""
    hidden = []
    for home in homes():
        for name in CREDENTIAL_STORES:
            path = os.path.realpath(os.path.join(home, name))
            if not os.path.exists(path) or _under(path, tuple(writable)) or path in hidden:
                continue
            if os.path.isdir(path):
                _mount("tmpfs", path, "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC, "mode=0500,size=4k")
            else:
                _mount("/dev/null", path, None, MS_BIND)
            hidden.append(path)
    return hidden


def confine(writable: list[str], overlays: list[tuple[str, str]] = (), gpu: bool = False) -> None:
    """Everything read-only but `writable` (and the overlays' private layers), /dev minimal (`minimal_dev`, built
    in the first writable folder), /proc/sys read-only."""
    if not writable:
        raise OSError(0, "no writable folder to build the minimal /dev in")
    before = mounts()
    for folder in writable:
        _mount(folder, folder, None, MS_BIND | MS_REC)
    for lower, base in overlays:
        try:
            overlay(lower, base)
        except OSError as e:  # no overlayfs here: an empty private folder instead (a cold cache, never a shared one)
            private = os.path.join(base, "private")
            os.makedirs(private, exist_ok=True)
            print(f"confine: {e}; {lower} is replaced by an empty private folder", file=sys.stderr)
            _mount(private, lower, None, MS_BIND | MS_REC)
    minimal_dev(os.path.join(writable[0], ".dev"), gpu)
    hide_credentials(writable)
    if os.path.isdir("/proc/sys"):
        _mount("/proc/sys", "/proc/sys", None, MS_BIND | MS_REC)
        _mount(None, "/proc/sys", None, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC)
    for point, flags in before:
        if point != "/" and _under(point, LEFT_WRITABLE):
            continue
        try:
            _mount(None, point, None, MS_REMOUNT | MS_BIND | MS_RDONLY | flags)
        except OSError:
            if point == "/":
                raise
            # A mount hidden under another one, or one this namespace may not touch: the write test of the
            # probe (eval/launch/sandbox.py) covers what matters, the root.


def enter(confinement: Confinement) -> None:
    """Join the memory cgroups, then confine the file system (OSError where it cannot be). The caller then locks
    down (`settle`)."""
    for cage in confinement.cages:  # "0": the writing process itself (its pid in this namespace is not the parent's)
        with open(os.path.join(cage, "cgroup.procs"), "w") as f:
            f.write("0")
    writable = [os.path.realpath(w) for w in confinement.writable]
    overlays = [(os.path.realpath(lo), os.path.realpath(b)) for lo, b in confinement.overlays]
    kept = [(lo, b) for lo, b in overlays if os.path.isdir(lo)]
    confine([w for w in writable if os.path.isdir(w)], kept, confinement.gpu)


def as_unprivileged_user() -> None:
    """This process (single-threaded) into a user namespace of its own where it is uid and gid CANDIDATE_ID
    (mapped onto its own uid and gid, as bubblewrap's --unshare-user --uid does), with no capability left there
    (`lock_down`). Called while it still holds its capabilities: mapping uid 0 (root's, or a user namespace's root)
    takes CAP_SETFCAP at the unshare. OSError where a step fails. What that changes and what not: docs/harness.md
    ("Isolation")."""
    uid, gid = os.geteuid(), os.getegid()
    if _libc.unshare(CLONE_NEWUSER) != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"unshare(CLONE_NEWUSER): {os.strerror(err)}")
    for name, text in (
        ("setgroups", "deny"),
        ("uid_map", f"{CANDIDATE_ID} {uid} 1"),
        ("gid_map", f"{CANDIDATE_ID} {gid} 1"),
    ):
        with open(f"/proc/self/{name}", "w") as f:
            f.write(text)
    lock_down()
    if (os.getuid(), os.getgid()) != (CANDIDATE_ID, CANDIDATE_ID):
        raise OSError(f"uid {os.getuid()} and gid {os.getgid()} after the user namespace, not {CANDIDATE_ID}")


def drop_capabilities() -> None:
    """Every capability of this thread gone for good (the bounding set first, which needs CAP_SETPCAP, then the
    ambient, inheritable, permitted and effective sets), and no_new_privs: no exec, of a setuid file or as root,
    gives any back. OSError where a step fails."""
    with open("/proc/sys/kernel/cap_last_cap") as f:
        last = int(f.read())
    _prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL)
    for cap in range(last + 1):
        _prctl(PR_CAPBSET_DROP, cap)
    header = _CapHeader(_LINUX_CAPABILITY_VERSION_3, 0)
    data = (_CapData * 2)()
    if _libc.capset(ctypes.byref(header), data) != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"capset: {os.strerror(err)}")
    _prctl(PR_SET_NO_NEW_PRIVS, 1)


def not_dropped() -> list[str]:
    """What /proc/self/status shows of this process's privileges that should be gone: the capability sets that are
    not empty, no_new_privs unset ([] when all is as drop_capabilities leaves it)."""
    left = []
    with open("/proc/self/status") as f:
        fields = dict(line.split(":", 1) for line in f if ":" in line)
    for name in CAP_FIELDS:
        value = fields.get(name, "").strip()
        if not value or int(value, 16) != 0:
            left.append(f"{name} {value or 'missing'}")
    if fields.get("NoNewPrivs", "").strip() != "1":
        left.append(f"NoNewPrivs {fields.get('NoNewPrivs', 'missing').strip()}")
    return left


def lock_down() -> None:
    """drop_capabilities, then check /proc/self/status: OSError unless every set is empty and no_new_privs is set
    (a job never runs unconfined where the sandbox was promised)."""
    drop_capabilities()
    left = not_dropped()
    if left:
        raise OSError(f"privileges left after dropping them: {', '.join(left)}")


def settle(confinement: Confinement) -> None:
    """After `enter`: no capability left (`lock_down`), and where the confinement says so the unprivileged uid of
    a user namespace of its own first (`as_unprivileged_user`)."""
    if confinement.user:
        as_unprivileged_user()
    else:
        lock_down()


def main(argv: list[str]) -> None:
    if "--" not in argv:
        sys.exit("usage: python -m kernelevolve.eval.launch.confine --rw DIR ... -- COMMAND...")
    split = argv.index("--")
    confinement, command = Confinement.parse(argv[:split]), argv[split + 1 :]
    try:
        enter(confinement)
        settle(confinement)
    except OSError as e:
        print(f"confine: {e}", file=sys.stderr)
        sys.exit(CANNOT_CONFINE)
    try:
        os.execvp(command[0], command)
    except OSError as e:
        print(f"confine: {command[0]}: {e}", file=sys.stderr)
        sys.exit(127)


if __name__ == "__main__":
    main(sys.argv[1:])
