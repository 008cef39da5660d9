"""Run inside the candidate's namespaces, before the worker: make the file system read-only except the folders the
worker must write, then drop every capability and exec the worker (torch-free; started by eval/sandbox.py).

`python -m kernelevolve.eval.confine [--cgroup DIR] --rw DIR [--rw DIR ...] [--overlay DIR=BASE ...] -- COMMAND...`

- With `--cgroup`, it first joins that memory cgroup (eval/cgroup.py): the limit then holds over every process the
  worker starts, and the cgroup files are read-only to them like the rest.

- Every mount this process sees becomes read-only in its own mount namespace (the store, the run directories, the
  problem files, the package), except /dev (device nodes, the GPU's among them) and this namespace's /proc.
- Each `--rw` folder is bound onto itself first, so it stays writable: the worker's private temporary folder, or,
  for the harness's build step, its staging folder.
- Each `--overlay` folder (the shared caches: the measured peaks, Triton's and inductor's) is seen through an
  overlay whose upper layer is BASE/upper, in the worker's private folder: what the caches hold is readable, what
  the worker writes stays its own (eval/sandbox.py shares only what it wrote before the candidate loaded). Where
  overlayfs cannot be mounted, an empty private folder takes its place (a cold cache, never a shared writable
  one), with a line on stderr.
- /dev/shm becomes a private tmpfs, /proc/sys read-only.
- Then `setpriv` clears the capability sets and sets no_new_privs: the candidate, root or not, cannot remount.

Exit status 97 with a line on stderr when the root cannot be made read-only (or `setpriv` is missing): the probe
in eval/sandbox.py then runs workers without this step, and every result says the file system is writable.
"""

from __future__ import annotations

import ctypes
import os
import shutil
import sys

MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC = 1, 2, 4, 8
MS_REMOUNT, MS_NOATIME, MS_NODIRATIME, MS_BIND, MS_REC = 32, 1024, 2048, 4096, 16384
MS_RELATIME, MS_STRICTATIME = 1 << 21, 1 << 24
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
LEFT_WRITABLE = ("/dev", "/proc")  # device nodes; this namespace's own /proc (its /proc/sys is made read-only)
CANNOT_CONFINE = 97
CAP_DROP = ["--bounding-set=-all", "--inh-caps=-all", "--ambient-caps=-all", "--no-new-privs"]

_libc = ctypes.CDLL(None, use_errno=True)
_libc.mount.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_ulong, ctypes.c_char_p]


def _bytes(text: str | None) -> bytes | None:
    return text.encode() if text is not None else None


def _mount(source: str | None, target: str, fstype: str | None, flags: int, data: str | None = None) -> None:
    if _libc.mount(_bytes(source), _bytes(target), _bytes(fstype), flags, _bytes(data)) != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"mount {target}: {os.strerror(err)}")


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


def confine(writable: list[str], overlays: list[tuple[str, str]] = ()) -> None:
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
    if os.path.isdir("/dev/shm"):
        _mount("tmpfs", "/dev/shm", "tmpfs", MS_NOSUID | MS_NODEV, "mode=1777")
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
            # probe (eval/sandbox.py) covers what matters, the root.


def main(argv: list[str]) -> None:
    if "--" not in argv:
        sys.exit("usage: python -m kernelevolve.eval.confine --rw DIR ... -- COMMAND...")
    split = argv.index("--")
    options, command = argv[:split], argv[split + 1 :]
    writable = [os.path.realpath(options[i + 1]) for i, o in enumerate(options) if o == "--rw"]
    overlays = []
    for i, o in enumerate(options):
        if o == "--overlay":
            lower, _, base = options[i + 1].partition("=")
            overlays.append((os.path.realpath(lower), os.path.realpath(base)))
    cages = [options[i + 1] for i, o in enumerate(options) if o == "--cgroup"]
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        print("confine: util-linux `setpriv` is not installed", file=sys.stderr)
        sys.exit(CANNOT_CONFINE)
    try:
        for cage in cages:  # "0": the writing process itself (its pid in this namespace is not the parent's)
            with open(os.path.join(cage, "cgroup.procs"), "w") as f:
                f.write("0")
        confine([w for w in writable if os.path.isdir(w)], [(lo, b) for lo, b in overlays if os.path.isdir(lo)])
    except OSError as e:
        print(f"confine: {e}", file=sys.stderr)
        sys.exit(CANNOT_CONFINE)
    os.execv(setpriv, [setpriv, *CAP_DROP, "--", *command])


if __name__ == "__main__":
    main(sys.argv[1:])
