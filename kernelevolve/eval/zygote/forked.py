"""A worker forked by the zygote (eval/launch/zygote.py) makes itself what an exec'd worker is before it runs the
worker's `main`: its own session, the descriptors it was given at the numbers its environment names and no other,
the sandbox's namespaces and confinement (eval/launch/confine.py, the exec'd path's own functions), no
capabilities, and exactly the environment the exec'd worker would have had. Nothing here runs candidate code:
until `main` the process is the zygote's.

The steps (`become_worker`), how it degrades, and what still differs from an exec'd worker: docs/architecture.md
(`zygote/forked.py` in "Modules", "Workers start by fork from a zygote").
"""

from __future__ import annotations

import ctypes
import fcntl
import io
import os
import resource
import select
import signal
import sys
import tempfile
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any, NoReturn

from kernelevolve.eval.launch import confine
from kernelevolve.eval.wire import Spec

CLONE_NEWNS, CLONE_NEWPID, CLONE_NEWNET, CLONE_NEWIPC = 0x00020000, 0x20000000, 0x40000000, 0x08000000
PR_SET_PDEATHSIG = 1
CANNOT_START = 96  # the worker could not be made as the sandbox promised: the evaluator reads "exited before ready"
WORKER_MAIN = str(Path(__file__).resolve().parents[1] / "worker" / "__main__.py")  # its sys.argv[0] when exec'd

_libc = ctypes.CDLL(None, use_errno=True)


def fork(spec: Spec, fds: list[int], in_child: Callable[[], Any]) -> int:
    """Fork the worker's first process (in the zygote); its pid, once it leads its own session, so that a kill of
    its group cannot miss it (or once it died: its exit says why). in_child: called first in the child."""
    sys.stdout.flush()
    sys.stderr.flush()
    started_read, started_write = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            os.close(started_read)
            in_child()
            become_worker(spec, fds, started_write)
        finally:
            os._exit(CANNOT_START)
    os.close(started_write)
    try:
        os.read(started_read, 1)
    finally:
        os.close(started_read)
    return pid


def become_worker(spec: Spec, fds: list[int], started: int) -> NoReturn:
    """In the zygote's fresh child: never returns. started: a pipe's write end, written once this process leads its
    own session (the zygote answers with its pid only then, so a kill of the group cannot miss it)."""
    try:
        signal.set_wakeup_fd(-1)
        for sig in (signal.SIGCHLD, signal.SIGTERM):
            signal.signal(sig, signal.SIG_DFL)
        os.setsid()
        os.write(started, b"s")
        _place(fds, spec.targets)  # from here on, stderr is the worker's log
        _take_working_folder(spec.cwd)  # before the namespaces, as an exec'd worker inherits it
        if not spec.namespaces:
            _run_worker(spec)
        if _libc.unshare(CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWNET | CLONE_NEWIPC) != 0:
            err = ctypes.get_errno()
            raise OSError(err, f"unshare: {os.strerror(err)}")
        confine.make_mounts_private()  # before any other mount: none may reach the host's namespace
        alive_read, alive_write = os.pipe()
        held = _open_fds()  # listed before the worker mounts its /proc, where this process has no entry
        pid = os.fork()
        if pid == 0:
            os.close(alive_write)
            _in_namespaces(spec, alive_read)
        for fd in held:  # it holds nothing of the worker's: only the pipe that tells the worker it lives
            if fd != alive_write:
                _close(fd)
        _exit_as(pid)
    except BaseException:  # noqa: BLE001 - whatever failed, the worker never runs
        _fail()


def _in_namespaces(spec: Spec, alive: int) -> NoReturn:
    """The worker, first process of its PID namespace."""
    try:
        if _libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0) != 0:
            err = ctypes.get_errno()
            raise OSError(err, f"prctl PDEATHSIG: {os.strerror(err)}")
        if select.select([alive], [], [], 0)[0]:  # its end closed: the first process died before PDEATHSIG was set
            os._exit(CANNOT_START)
        os.close(alive)
        confine.mount_proc()
        if spec.confinement is not None:
            confine.enter(spec.confinement)
            confine.settle(spec.confinement)
        else:  # the file system cannot be confined: no capability is promised gone, but none is kept that can go
            try:
                confine.drop_capabilities()
            except OSError:
                pass
        _run_worker(spec)
    except BaseException:  # noqa: BLE001
        _fail()


def _run_worker(spec: Spec) -> NoReturn:
    """What differs between the zygote and a fresh `python -m kernelevolve.eval.worker` in this environment, reset;
    then the worker's main."""
    sys.argv = [WORKER_MAIN]
    os.environ.clear()
    os.environ.update(spec.env)
    _blank_zygote_environ()
    tempfile.tempdir = None  # TMPDIR is the worker's private folder now
    _fresh_streams()
    if "numpy.random" in sys.modules:  # seeded at import, in the zygote: a fresh process draws its own seed
        sys.modules["numpy.random"].seed()
    from kernelevolve.eval.worker.main import main

    code = 0
    try:
        main()
    except SystemExit as e:  # as the interpreter ends on it
        if e.code is None or isinstance(e.code, int):
            code = e.code or 0
        else:
            print(e.code, file=sys.stderr)
            code = 1
    except BaseException:  # noqa: BLE001 - as the interpreter ends on an uncaught exception
        traceback.print_exc()
        code = 1
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass
    os._exit(code)


def _blank_zygote_environ() -> None:
    """Zero the environment block the zygote was exec'd with, which /proc/self/environ shows for good (moving it
    takes CAP_SYS_RESOURCE): none of the zygote's start-time values stays readable. os.environ was replaced first,
    so nothing points into it any more."""
    with open("/proc/self/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    start, end = int(fields[47]), int(fields[48])  # env_start, env_end: fields 50 and 51 of proc(5)
    if 0 < start < end:
        ctypes.memset(ctypes.c_void_p(start), 0, end - start)


def _take_working_folder(cwd: str) -> None:
    """The evaluator's working folder, first on sys.path where the zygote's was (`python -m` puts it there)."""
    zygote_cwd = os.getcwd()
    os.chdir(cwd)
    if sys.path and sys.path[0] == zygote_cwd:
        sys.path[0] = cwd


def _fresh_streams() -> None:
    """sys.stdin, stdout and stderr over descriptors 0, 1 and 2, made as the zygote's own start made them (this
    environment's buffering and encoding): the zygote's cached what their descriptors were then (/dev/null is
    seekable, the job's pipe is not)."""
    for name, fd in (("stdin", 0), ("stdout", 1), ("stderr", 2)):
        old = getattr(sys, name)
        unbuffered = isinstance(old.buffer, io.FileIO)
        raw = open(fd, "wb" if fd else "rb", buffering=0 if unbuffered else -1, closefd=False)  # noqa: SIM115
        stream = io.TextIOWrapper(
            raw,
            encoding=old.encoding,
            errors=old.errors,
            newline="\n",
            line_buffering=old.line_buffering,
            write_through=old.write_through,
        )
        setattr(sys, name, stream)
        setattr(sys, f"__{name}__", stream)


def _place(fds: list[int], targets: list[int]) -> None:
    """Each received descriptor at its target number, inheritable (as Popen's pass_fds leaves them); every other
    descriptor closed, the zygote's socket among them."""
    if len(fds) != len(targets):
        raise OSError(f"{len(fds)} descriptors for {len(targets)} numbers")
    top = max([2, *fds, *targets]) + 1
    moved = [fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, top) for fd in fds]  # out of the way of every target
    for fd, target in zip(moved, targets):
        os.dup2(fd, target)
    keep = set(targets)
    for fd in _open_fds():
        if fd not in keep:
            _close(fd)


def _open_fds() -> list[int]:
    return [int(name) for name in os.listdir("/proc/self/fd")]


def _close(fd: int) -> None:
    try:
        os.close(fd)
    except OSError:  # the listing's own descriptor, closed already
        pass


def _exit_as(pid: int) -> NoReturn:
    """Wait for the worker and end as it did: its exit status, or killed by its signal."""
    try:
        _, status = os.waitpid(pid, 0)
    except ChildProcessError:
        os._exit(CANNOT_START)
    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))  # never a core file of this process
        signal.signal(sig, signal.SIG_DFL)
        signal.pthread_sigmask(signal.SIG_UNBLOCK, [sig])
        os.kill(os.getpid(), sig)
        os._exit(128 + sig)
    os._exit(os.waitstatus_to_exitcode(status))


def _fail() -> NoReturn:
    """Why the worker could not be made, on stderr (the worker's log once the descriptors are placed)."""
    try:
        sys.stderr.write("kernelevolve zygote: the worker could not be confined and did not start:\n")
        sys.stderr.write(traceback.format_exc())
        sys.stderr.flush()
    finally:
        os._exit(CANNOT_START)
