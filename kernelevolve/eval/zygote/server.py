"""The worker zygote (`python -m kernelevolve.eval.zygote.server FD`): a trusted process that has imported what a
worker imports before its job (torch, Triton where it imports, the harness) and forks each new worker from that,
so a worker's start costs a fork instead of torch's import (eval/launch/zygote.py is the evaluator's side).

It never initialises CUDA (a GPU worker forked after that could not make a context of its own) and never runs
candidate code; it keeps its capabilities, to make each worker's namespaces, in a network namespace of its own with
no network. It reads only the Unix socket FD from its parent, one message per request (eval/launch/zygote.py), and never
anything a worker sends. It is single-threaded: a fork copies only the thread that calls it. Its children are
reaped here and their exit statuses sent to the parent; when the parent's end of the socket closes, the parent is
gone, and it kills every worker it started and exits.
"""

from __future__ import annotations

import json
import os
import select
import signal
import socket
import sys
from typing import Any

MAX_MESSAGE = 1 << 22
MAX_FDS = 64


def _prepare() -> None:
    """Import what `kernelevolve.eval.worker.main` imports before it says ready (eval/worker/main.py), and Triton."""
    import torch  # noqa: F401

    try:
        import triton  # noqa: F401
    except Exception:  # noqa: BLE001 - no Triton, or one that fails to import: the worker finds the same
        pass
    import kernelevolve.eval.wire  # noqa: F401
    import kernelevolve.eval.worker.harness  # noqa: F401
    import kernelevolve.eval.worker.launches  # noqa: F401
    import kernelevolve.eval.worker.main  # noqa: F401
    import kernelevolve.eval.worker.runner  # noqa: F401
    import kernelevolve.eval.zygote.forked  # noqa: F401
    import kernelevolve.problem.problem  # noqa: F401


def _send(sock: socket.socket, message: dict[str, Any]) -> None:
    sock.sendall(json.dumps(message).encode())


class Server:
    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self.children: set[int] = set()  # forked and not yet reaped: their pids (and groups) are still theirs
        self.wake_read, wake_write = os.pipe()
        os.set_blocking(wake_write, False)
        os.set_blocking(self.wake_read, False)
        signal.signal(signal.SIGCHLD, lambda *_: None)  # a handler, so that the wakeup descriptor is written
        signal.set_wakeup_fd(wake_write, warn_on_full_buffer=False)
        self.wake_write = wake_write

    def serve(self) -> None:
        poller = select.poll()  # no descriptor of its own for a child to inherit
        poller.register(self.sock, select.POLLIN)
        poller.register(self.wake_read, select.POLLIN)
        while True:
            for fd, _ in poller.poll():
                if fd == self.wake_read:
                    while True:
                        try:
                            if not os.read(self.wake_read, 4096):
                                break
                        except BlockingIOError:
                            break
                elif not self._request():
                    self._end()
                    return
            self._reap()

    def _request(self) -> bool:
        """Handle one message; False when the parent is gone."""
        try:
            data, fds, flags, _ = socket.recv_fds(self.sock, MAX_MESSAGE, MAX_FDS)
        except ConnectionError:
            return False
        if not data:
            for fd in fds:
                os.close(fd)
            return False
        message: Any = None
        try:
            if flags & (socket.MSG_CTRUNC | socket.MSG_TRUNC):
                raise ValueError("the request was cut short")
            message = json.loads(data)
            if message.get("op") == "kill":  # answered by the worker's exit
                self._kill(int(message["pid"]))
            else:  # a fork, answered with its pid, or why not
                self._fork(message, fds)
        except Exception as e:  # noqa: BLE001 - a request that fails is answered; the zygote serves on
            request = message.get("id", -1) if isinstance(message, dict) else -1
            _send(self.sock, {"op": "failed", "id": request, "error": f"{type(e).__name__}: {e}"})
        finally:
            for fd in fds:
                try:
                    os.close(fd)
                except OSError:
                    pass
        return True

    def _fork(self, message: dict[str, Any], fds: list[int]) -> None:
        from kernelevolve.eval.zygote import forked

        if message.get("op") != "fork":
            raise ValueError(f"unknown request {message.get('op')!r}")
        spec = forked.Spec.from_json(message["spec"])
        # The socket is closed with every other descriptor of the zygote's in the child, never by its collection.
        pid = forked.fork(spec, fds, in_child=self.sock.detach)
        self.children.add(pid)
        _send(self.sock, {"op": "started", "id": message.get("id", -1), "pid": pid})

    def _kill(self, pid: int) -> None:
        """SIGKILL a worker's whole group; only a child not yet reaped, so the group is certainly its."""
        if pid in self.children:
            try:
                os.killpg(pid, signal.SIGKILL)
            except OSError:  # none left in the group: its exit is on its way
                pass

    def _reap(self) -> None:
        while self.children:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                return
            self.children.discard(pid)
            try:
                _send(self.sock, {"op": "exit", "pid": pid, "code": os.waitstatus_to_exitcode(status)})
            except OSError:  # the parent is gone: the loop ends at its socket's end
                pass

    def _end(self) -> None:
        for pid in list(self.children):
            self._kill(pid)
        for pid in list(self.children):
            try:
                os.waitpid(pid, 0)
            except ChildProcessError:
                pass


def main(argv: list[str]) -> None:
    sock = socket.socket(fileno=int(argv[0]))
    try:
        _prepare()
        from kernelevolve.platforms import device_initialized

        if device_initialized():
            raise RuntimeError("CUDA was initialised while importing: a forked worker could not use it")
    except BaseException as e:  # noqa: BLE001 - said to the parent, which starts workers by exec instead
        _send(sock, {"op": "failed", "error": f"{type(e).__name__}: {e}"})
        os._exit(1)
    server = Server(sock)
    _send(sock, {"op": "ready", "pid": os.getpid()})
    server.serve()
    os._exit(0)  # no interpreter teardown: torch's takes a while, and the parent may be waiting


if __name__ == "__main__":
    main(sys.argv[1:])
