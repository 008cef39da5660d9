"""Worker starts by fork (parent side, torch-free): a zygote per worker environment (eval/zygote/server.py) imports
torch once and forks each worker from there, so a worker's start costs a fork instead of torch's import. The
forked worker confines itself as the exec'd one is confined (eval/zygote/forked.py).

When a zygote starts, which workers it serves, how it ends, and the fallback to exec (`KERNELEVOLVE_ZYGOTE=off`):
docs/architecture.md ("Workers start by fork from a zygote", and `launch/zygote.py` in "Modules").
"""

from __future__ import annotations

import atexit
import collections
import functools
import itertools
import json
import os
import select
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Mapping, Sequence
from typing import Any

from kernelevolve.eval.launch import sandbox
from kernelevolve.eval.wire import Spec

OFF_ENV = "KERNELEVOLVE_ZYGOTE"
SERVER = "kernelevolve.eval.zygote.server"
READY_TIMEOUT_S = 180.0  # the zygote's imports, on a busy machine
REPLY_TIMEOUT_S = 60.0
KEPT_ZYGOTES = 4  # environments that each keep a zygote (cpu and GPU targets in one process)
SOCKET_BUFFER = 1 << 22  # one request (a whole environment) is one message


class ZygoteError(Exception):
    """The zygote could not start a worker: the caller starts it by exec."""


def enabled() -> bool:
    if os.environ.get(OFF_ENV, "").strip().lower() in ("0", "off", "no", "false"):
        return False
    return sys.platform.startswith("linux") and hasattr(socket, "send_fds") and _pidfds()


@functools.cache
def _pidfds() -> bool:
    """Whether this kernel gives pidfds (Linux 5.3), through which a worker's exit stays visible should its zygote
    die first."""
    try:
        os.close(os.pidfd_open(os.getpid()))
    except (AttributeError, OSError):
        return False
    return True


def _say(line: str) -> None:
    print(f"[kernelevolve] {line}", file=sys.stderr, flush=True)


class Zygote:
    """One zygote process and the socket to it. Thread-safe: a lock orders the requests and the reading of replies
    (the build service asks whether a worker lives from a thread of its own)."""

    def __init__(self, env: Mapping[str, str]) -> None:
        self.env = dict(env)
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        for s in (ours, theirs):
            s.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, SOCKET_BUFFER)
            s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, SOCKET_BUFFER)
        cmd = [*sandbox.zygote_prefix(), sys.executable, "-m", SERVER, str(theirs.fileno())]
        try:
            self.proc = subprocess.Popen(
                cmd,
                env=self.env,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                pass_fds=(theirs.fileno(),),
                start_new_session=True,  # the terminal's Ctrl-C is the evaluator's to handle
            )
        except OSError as e:
            ours.close()
            raise ZygoteError(f"cannot run it: {e}") from e
        finally:
            theirs.close()
        self.sock = ours
        self._lock = threading.RLock()
        self._replies: collections.deque[dict[str, Any]] = collections.deque()
        self._exits: dict[int, int] = {}
        self._live: set[int] = set()  # forked workers whose status was not taken yet
        self._pidfds: dict[int, int] = {}
        self._orphans: set[int] = set()  # started for a caller that stopped waiting: killed, their exits dropped
        self._dead = ""
        self._requests = itertools.count(1)
        reply = self._reply(0, time.monotonic() + READY_TIMEOUT_S)
        if reply.get("op") != "ready":
            self.close()
            raise ZygoteError(str(reply.get("error") or reply))
        self.pid = int(reply["pid"])

    def alive(self) -> bool:
        return not self._dead and self.proc.poll() is None

    def fork(self, spec: Spec, fds: Sequence[int]) -> int:
        """A worker for spec, given fds (spec.targets names their numbers); its pid here."""
        with self._lock:
            request = next(self._requests)
            data = json.dumps({"op": "fork", "id": request, "spec": spec.to_json()}).encode()
            if self._dead:
                raise ZygoteError(self._dead)
            try:
                socket.send_fds(self.sock, [data], list(fds))
            except OSError as e:
                raise ZygoteError(f"the request could not be sent: {e}") from e
            reply = self._reply(request, time.monotonic() + REPLY_TIMEOUT_S)
            if reply.get("op") != "started":
                raise ZygoteError(str(reply.get("error") or reply))
            pid = int(reply["pid"])
            self._exits.pop(pid, None)  # an earlier worker's status under a pid now reused: read before this reply
            self._live.add(pid)
            try:  # its exit stays visible here should the zygote die before it
                self._pidfds[pid] = os.pidfd_open(pid)
            except OSError:  # gone already: its exit status is on its way
                pass
            return pid

    def kill(self, pid: int) -> None:
        """SIGKILL the worker's group: by the zygote while it lives (the pid is surely the worker's until the zygote
        reaps it), else here."""
        with self._lock:
            if pid not in self._live:
                return
            if not self._dead:
                try:
                    self.sock.sendall(json.dumps({"op": "kill", "pid": pid}).encode())
                    return
                except OSError as e:
                    self._gone(f"its socket failed: {e}")
            if not self._exited(pid):
                _kill_group(pid)

    def exit_status(self, pid: int, timeout: float | None) -> int | None:
        """The worker's exit status once the zygote has reaped it (Popen's: negative for a signal); None while it
        runs, after waiting up to timeout (None: for ever)."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            with self._lock:
                self._pump(0.0)
                if pid in self._exits:  # kept for every waiter (the evaluation's thread and a kill may both wait)
                    return self._forget(pid, self._exits[pid])
                if self._dead and self._exited(pid):  # reaped by no one we can ask: its status is unknown
                    return self._forget(pid, -signal.SIGKILL)
                left = None if deadline is None else deadline - time.monotonic()
                if left is not None and left <= 0:
                    return None
                if self._dead:
                    fd = self._pidfds.get(pid)
                    if fd is not None:
                        select.select([fd], [], [], 0.05 if left is None else min(left, 0.05))
                    continue
                self._pump(0.05 if left is None else min(left, 0.05))

    def close(self) -> None:
        """End the zygote: its socket's end tells it to kill its workers and exit."""
        with self._lock:
            if not self._dead:
                self._gone("closed")
            self.sock.close()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()

    def _exited(self, pid: int) -> bool:
        """Whether the worker has exited, as its pidfd tells (True where there is none: it was gone at once)."""
        fd = self._pidfds.get(pid)
        return fd is None or bool(select.select([fd], [], [], 0)[0])

    def _forget(self, pid: int, code: int) -> int:
        self._live.discard(pid)
        fd = self._pidfds.pop(pid, None)
        if fd is not None:
            os.close(fd)
        return code

    def _reply(self, request: int, deadline: float) -> dict[str, Any]:
        """The reply to request (0: the zygote's `ready`); exit statuses read meanwhile are kept. A worker started
        for an earlier request whose caller stopped waiting (an exception, Ctrl-C) is nobody's: it is killed."""
        with self._lock:
            while True:
                while self._replies:
                    reply = self._replies.popleft()
                    if reply.get("id", 0) == request:
                        return reply
                    if reply.get("op") == "started":
                        orphan = int(reply["pid"])
                        self._live.add(orphan)
                        self._orphans.add(orphan)
                        self.kill(orphan)
                if self._dead:
                    return {"op": "failed", "error": self._dead}
                left = deadline - time.monotonic()
                if left <= 0:
                    self._gone("it did not answer in time")
                    self.proc.kill()
                    continue
                self._pump(min(left, 1.0))

    def _pump(self, timeout: float) -> None:
        """Read every message the zygote sent, waiting up to timeout for the first (under the lock)."""
        while not self._dead:
            try:
                ready, _, _ = select.select([self.sock], [], [], timeout)
                if not ready:
                    return
                data = self.sock.recv(1 << 16)
            except OSError as e:
                self._gone(f"its socket failed: {e}")
                return
            timeout = 0.0
            if not data:
                self._gone("it exited")
                return
            message = json.loads(data)
            if message.get("op") == "exit":
                pid = int(message["pid"])
                self._exits[pid] = int(message["code"])
                if pid in self._orphans:  # nobody will ask
                    self._orphans.discard(pid)
                    self._forget(pid, self._exits.pop(pid))
            else:
                self._replies.append(message)

    def _gone(self, why: str) -> None:
        """The zygote is gone: the workers it started run on, their exits seen through their pidfds, but nobody can
        tell their statuses any more; they read as killed by SIGKILL, and that is said."""
        self._dead = f"the worker zygote ended ({why})"
        running = [pid for pid in self._live if pid not in self._exits]
        if running and why != "closed":
            _say(f"{self._dead}: the exit statuses of the {len(running)} worker(s) it started will read as SIGKILL")


def _kill_group(pid: int) -> None:
    try:
        os.killpg(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


class ZygoteProcess:
    """A forked worker as the evaluator and eval/launch/spawn.py use a subprocess.Popen: pid (its process group's too),
    stdin, poll, wait, returncode; kill_group kills the group through the zygote."""

    def __init__(self, zygote: Zygote, pid: int, stdin: int) -> None:
        self.zygote, self.pid = zygote, pid
        self.args = ["python", "-m", "kernelevolve.eval.worker"]
        self.stdin = os.fdopen(stdin, "wb")
        self.returncode: int | None = None
        self.private_tmp: str | None = None
        self.memory_cage: Any = None

    def poll(self) -> int | None:
        if self.returncode is None:
            self.returncode = self.zygote.exit_status(self.pid, 0)
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        if self.returncode is None:
            self.returncode = self.zygote.exit_status(self.pid, timeout)
            if self.returncode is None:
                raise subprocess.TimeoutExpired(self.args, timeout or 0)
        return self.returncode

    def kill_group(self) -> None:
        if self.returncode is None:
            self.zygote.kill(self.pid)


_zygotes: dict[frozenset[tuple[str, str]], Zygote] = {}
_failed: set[frozenset[tuple[str, str]]] = set()
_registry = threading.Lock()


def _key(env: Mapping[str, str]) -> frozenset[tuple[str, str]]:
    return frozenset((k, v) for k, v in env.items() if not k.startswith("KERNELEVOLVE_") and k != "PYTEST_CURRENT_TEST")


def _zygote(env: Mapping[str, str]) -> Zygote | None:
    """The zygote for env, started (again) if need be; None where it cannot start (said once)."""
    key = _key(env)
    with _registry:
        zygote = _zygotes.pop(key, None)
        if zygote is not None and not zygote.alive():
            _say(f"{zygote._dead or 'the worker zygote ended'}: starting it again")
            zygote.close()
            zygote = None
        if zygote is None:
            if key in _failed:
                return None
            try:
                zygote = Zygote(env)
            except ZygoteError as e:
                _failed.add(key)
                _say(f"the worker zygote could not start ({e}): workers start by exec")
                return None
        _zygotes[key] = zygote  # the most recent last
        for old in list(_zygotes)[:-KEPT_ZYGOTES]:
            if not _zygotes[old]._live:
                _zygotes.pop(old).close()
        return zygote


def fork_worker(
    zygote_env: Mapping[str, str],
    env: Mapping[str, str],
    *,
    stdout: int,
    pass_fds: Sequence[int],
    confinement: Any,
) -> ZygoteProcess:
    """A worker forked by the zygote of zygote_env: its stdin a pipe (the process's `stdin`), stdout and stderr to
    the descriptor stdout, pass_fds at their own numbers, env its whole environment, in the sandbox's namespaces
    and `confinement` (sandbox.confinement). ZygoteError where no zygote could fork it."""
    zygote = _zygote(zygote_env)
    if zygote is None:
        raise ZygoteError("no worker zygote")
    spec = Spec(dict(env), [0, 1, 2, *pass_fds], os.getcwd(), bool(sandbox.prefix()), confinement)
    job_read, job_write = os.pipe()
    try:
        pid = zygote.fork(spec, [job_read, stdout, stdout, *pass_fds])
    except BaseException:
        os.close(job_write)
        raise
    finally:
        os.close(job_read)
    return ZygoteProcess(zygote, pid, job_write)


def close_all() -> None:
    with _registry:
        while _zygotes:
            _zygotes.popitem()[1].close()


def _forget_after_fork() -> None:
    """In a child forked from this process: the zygotes and their sockets are the parent's, never the child's."""
    global _registry
    _registry = threading.Lock()
    _zygotes.clear()
    _failed.clear()


atexit.register(close_all)
os.register_at_fork(after_in_child=_forget_after_fork)
