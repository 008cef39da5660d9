"""The harness's build service (parent side, torch-free): the C++/CUDA extensions a candidate asks for are built
here, in a build step of their own, never in the candidate's process.

A process that runs candidate code gets a `Channel` (two pipes, a serving thread of the parent); the service keys
each request itself, answers from `extensions/KEY` when complete, else builds it under the key's flock in
`python -m kernelevolve.eval.builds.step`, sandboxed, and renames the finished folder into place; torch's header is
precompiled per flag set (`header`). How and why, step by step: docs/architecture.md ("Extensions are built by the
harness, once per C++ source" and "torch's header, precompiled once per flag set").
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import shutil
import stat
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from kernelevolve.eval.builds import flags
from kernelevolve.eval.builds.extension_cache import (
    BUILD_FDS_ENV,
    BUILT,
    HEADERS,
    KINDS,
    PRECOMPILED,
    TORCH_HEADER,
    built,
    extensions_root,
    generated_sources,
    header_request,
    key,
)
from kernelevolve.eval.launch import sandbox, spawn

LOCKS, STAGING = ".locks", ".staging"
# What a failed build's log keeps: its first error is near the head, the last at the end.
LOG_HEAD, LOG_TAIL = 4000, 12000
STALE_STAGING_S = 3600.0
HEADERS_KEPT = 3  # precompiled headers (some 800 MB each) kept, the last used
# What a build may leave in the cache: its declared outputs (`declared_outputs`), at most this many bytes.
MAX_EXTENSION_BYTES = 256 << 20
MAX_HEADER_BYTES = 2 << 30
HEADER_OUTPUTS = ("/".join(TORCH_HEADER), "/".join(TORCH_HEADER) + ".gch", "not-made.txt")


class BuildService:
    """Builds requests into the extension cache under `root` (default: the cache's `extensions`)."""

    def __init__(
        self,
        root: Path | None = None,
        timeout_s: float = 600.0,
        env: dict[str, str] | None = None,
        memory_limit: int = 0,
    ):
        self.root = root or extensions_root()
        self.timeout_s = timeout_s
        self.env = env
        self.memory_limit = memory_limit

    def build(self, request: dict[str, Any], alive: Callable[[], bool] = lambda: True) -> dict[str, Any]:
        """{"ok": True, "folder": ...} or {"ok": False, "log": what the compiler said, or why there is no build}."""
        try:
            request = {k: v for k, v in request.items() if k != PRECOMPILED}  # the service's to set, not the caller's
            name = str(request["kwargs"]["name"])
            if request.get("kind") not in KINDS:
                raise ValueError(f"unknown kind {request.get('kind')!r}")
            build_key = key(request)
            bad = flags.refused(request["kwargs"])
        except (AttributeError, KeyError, TypeError, ValueError) as e:
            return {"ok": False, "log": f"malformed build request: {e}"}
        if bad:  # before any compiler runs: a flag can run a program at build time (eval/builds/flags.py)
            shown = "; ".join(bad[:5]) + (f" (and {len(bad) - 5} more)" if len(bad) > 5 else "")
            return {
                "ok": False,
                "log": f"build flags not allowed here: {shown}. Optimisation, target, defines, warnings, include and "
                "library paths and nvcc's code-generation options are; flags that run programs or write files at build "
                "time are not (docs/harness.md, Isolation)",
            }
        folder = built(self.root, build_key)
        if folder is not None:
            return {"ok": True, "folder": str(folder)}
        for sub in (LOCKS, STAGING):
            (self.root / sub).mkdir(parents=True, exist_ok=True)
        with _flock(self.root / LOCKS / f"{build_key}.lock", alive, time.monotonic() + self.timeout_s):
            folder = built(self.root, build_key)  # built by another while this waited
            if folder is not None:
                return {"ok": True, "folder": str(folder)}
            header = self.header(request, alive)
            if header is not None:
                request = {**request, PRECOMPILED: str(header)}
            staging = self._staging(build_key)
            try:
                why, code, log = self._step([str(staging)], request, name, alive, self.timeout_s)
                if why or code != 0:  # with the sources torch wrote that the log names, to place its errors
                    sources = generated_sources(staging, log)
                    return {"ok": False, "log": _failure(why, code, log), **({"sources": sources} if sources else {})}
                outputs = declared_outputs(request["kwargs"])
                final = self._publish(staging, self.root / build_key, name, outputs, MAX_EXTENSION_BYTES)
                return {"ok": True, "folder": str(final)}
            except OSError as e:
                return {"ok": False, "log": str(e)}
            finally:
                shutil.rmtree(staging, ignore_errors=True)

    def header(self, request: dict[str, Any], alive: Callable[[], bool] = lambda: True) -> Path | None:
        """The folder of torch's header precompiled for the request's flags, or None where none applies or none
        could be made. Made for the second build of a flag set (making it costs more than one build saves, so a
        single build never waits for it), in the sandboxed build step (the flags are the candidate's)."""
        wanted = header_request(request)
        if wanted is None:
            return None
        root, header_key = self.root / HEADERS, key(wanted)
        deadline = time.monotonic() + self.timeout_s / 2  # the build's own half of its deadline stays its own
        try:
            folder = built(root, header_key)
            if folder is None:
                for sub in (LOCKS, STAGING, HEADERS):
                    (self.root / sub).mkdir(parents=True, exist_ok=True)
                seen = root / f"{header_key}.seen"
                if not seen.exists():
                    seen.touch()
                    return None
                # Being made by another: this build parses the header itself sooner than it would wait.
                with _flock(self.root / LOCKS / f"header-{header_key}.lock", alive, deadline=0.0):
                    folder = built(root, header_key) or self._make_header(wanted, header_key, alive, deadline)
            if folder is None:
                return None
            os.utime(folder / BUILT)  # its last use, which eviction goes by
            return folder if folder.joinpath(*TORCH_HEADER[:-1], TORCH_HEADER[-1] + ".gch").is_file() else None
        except OSError:  # its lock held, a full disk: the build goes on without
            return None

    def _make_header(
        self, wanted: dict[str, Any], header_key: str, alive: Callable[[], bool], deadline: float
    ) -> Path | None:
        """Precompile into a staging folder and publish it, or, where it cannot be made (not GCC, flags torch's
        header refuses, past its deadline), publish it empty so that no later build of those flags tries again. A
        step stopped because its requester is gone publishes nothing."""
        staging = self._staging(f"header-{header_key}")
        try:
            left = max(0.0, deadline - time.monotonic())
            why, code, log = self._step(["--header", str(staging)], wanted, "torch's header", alive, left)
            if why and not alive():
                return None
            if why or code != 0:
                shutil.rmtree(staging)
                staging.mkdir()
                (staging / "not-made.txt").write_text(_failure(why, code, log) + "\n")
            final = self.root / HEADERS / header_key
            folder = self._publish(staging, final, "torch/extension.h", HEADER_OUTPUTS, MAX_HEADER_BYTES)
            self._evict_headers()
            return folder
        finally:
            shutil.rmtree(staging, ignore_errors=True)

    def _evict_headers(self) -> None:
        """Keep the HEADERS_KEPT headers last used (a build that was about to read one removed here parses torch's
        header instead)."""
        root = self.root / HEADERS
        made = [p for p in root.iterdir() if (p / BUILT).is_file()]
        made.sort(key=lambda p: (p / BUILT).stat().st_mtime, reverse=True)
        for old in made[HEADERS_KEPT:]:
            gone = Path(tempfile.mkdtemp(prefix="evicted-", dir=self.root / STAGING))
            os.rename(old, gone / old.name)
            shutil.rmtree(gone, ignore_errors=True)

    def _staging(self, prefix: str) -> Path:
        _sweep(self.root / STAGING)
        return Path(tempfile.mkdtemp(prefix=f"{prefix}-", dir=self.root / STAGING))

    def _publish(self, staging: Path, final: Path, name: str, outputs: tuple[str, ...], limit: int) -> Path:
        """Keep only the declared outputs of the finished staging folder (at most `limit` bytes), mark it and rename
        it to final (an OSError says why it cannot be)."""
        odd = _not_plain(staging)
        if odd:  # the build step ran the candidate's flags: a link here could point the parent anywhere
            raise OSError(f"the build left {odd}, which is not a plain file or folder")
        size = _keep_only(staging, outputs)
        if size > limit:
            raise OSError(f"the build's outputs take {size / 2**20:.0f} MB, over the limit of {limit / 2**20:.0f} MB")
        fd = os.open(staging / BUILT, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644)
        with os.fdopen(fd, "w") as marker:
            marker.write(json.dumps({"name": name, "pid": os.getpid()}) + "\n")
        if final.exists():  # an unfinished folder of an older layout: never loaded, replaced
            shutil.rmtree(final, ignore_errors=True)
        os.rename(staging, final)
        return final

    def _step(
        self, args: list[str], request: dict[str, Any], name: str, alive: Callable[[], bool], timeout_s: float
    ) -> tuple[str, int | None, str]:
        """Run the build step on request: (why this service stopped it, or ""; its exit status; its output)."""
        cmd = [sys.executable, "-m", "kernelevolve.eval.builds.step", *args]
        env = sandbox.child_env(self.env or {})
        with tempfile.TemporaryFile() as log:
            proc = spawn.start(
                cmd,
                sandboxed=True,
                writable=[args[-1]],
                memory_limit=self.memory_limit,  # the requester's limit holds over its builds too
                stdin=subprocess.PIPE,
                stdout=log,
                stderr=log,
                env=env,
            )
            try:
                assert proc.stdin is not None
                proc.stdin.write(json.dumps(request).encode())
                proc.stdin.close()
            except BrokenPipeError:
                pass
            why, deadline = "", time.monotonic() + timeout_s
            while proc.poll() is None:
                if not alive():
                    why = "stopped: the process that asked for it is gone"
                elif time.monotonic() > deadline:
                    why = f"the build of {name} ran past {timeout_s:.4g} s"
                if why:
                    break
                time.sleep(0.05)
            code = spawn.kill_group(proc)
            log.seek(0)
            return why, code, log.read().decode(errors="replace")


def _failure(why: str, code: int | None, log: str) -> str:
    tail = _shortened(log).strip()
    return f"{why}\n{tail}".strip() if why else tail or f"the build step exited with status {code}"


def _shortened(log: str) -> str:
    if len(log) <= LOG_HEAD + LOG_TAIL:
        return log
    cut = len(log) - LOG_HEAD - LOG_TAIL
    return f"{log[:LOG_HEAD]}\n[... {cut} characters of the build log left out ...]\n{log[-LOG_TAIL:]}"


@contextlib.contextmanager
def _flock(path: Path, alive: Callable[[], bool], deadline: float) -> Iterator[None]:
    """The key's lock, waited for while the requester lives and the deadline allows (a lock file is readable in
    the sandbox, and flock needs no more: a candidate could hold one)."""
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o644)
    try:
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if not alive() or time.monotonic() > deadline:
                    raise OSError(f"the build lock {path.name} stayed held") from None
                time.sleep(0.1)
        yield
    finally:
        os.close(fd)


def declared_outputs(kwargs: dict[str, Any]) -> tuple[str, ...]:
    """The files of a build that loading it reads (eval/builds/extension_cache.py `load_built`): the library torch
    imports or loads, or the standalone executable."""
    name = str(kwargs["name"])
    if kwargs.get("is_standalone"):
        return (name + (".exe" if sys.platform == "win32" else ""),)
    return (name + (".pyd" if sys.platform == "win32" else ".so"),)


def _keep_only(folder: Path, outputs: tuple[str, ...]) -> int:
    """Remove everything under folder (plain files and folders: `_not_plain`) but `outputs` (paths relative to
    it); the bytes they take."""
    kept = {folder / out for out in outputs}
    size = 0
    for root, dirs, files in os.walk(folder, topdown=False):
        for name in files:
            path = Path(root) / name
            if path in kept:
                size += path.stat().st_size
            else:
                path.unlink()
        for name in dirs:
            path = Path(root) / name
            if not any(path in out.parents for out in kept):
                shutil.rmtree(path)
    return size


def _not_plain(folder: Path) -> str:
    """The first entry under folder that is neither a plain file nor a folder ("" when there is none)."""
    for root, dirs, files in os.walk(folder):
        for name in dirs + files:
            path = os.path.join(root, name)
            mode = os.lstat(path).st_mode
            if not (stat.S_ISREG(mode) or stat.S_ISDIR(mode)):
                return os.path.relpath(path, folder)
    return ""


def _sweep(staging: Path) -> None:
    """Remove staging folders a killed parent left (older than an hour: no build runs that long unwatched)."""
    now = time.time()
    for entry in staging.iterdir():
        try:
            if now - entry.stat().st_mtime > STALE_STAGING_S:
                shutil.rmtree(entry, ignore_errors=True)
        except OSError:
            pass


class Channel:
    """The two pipes between a process that runs candidate code and the build service, and the thread that serves
    its requests until it closes its end."""

    def __init__(self, service: BuildService) -> None:
        self.service = service
        self._requests, self._child_requests = os.pipe()
        self._child_replies, self._replies = os.pipe()
        self._thread: threading.Thread | None = None
        self._served = False

    def child_env(self) -> dict[str, str]:
        return {BUILD_FDS_ENV: f"{self._child_requests},{self._child_replies}"}

    def child_fds(self) -> tuple[int, int]:
        return self._child_requests, self._child_replies

    def serve(self, alive: Callable[[], bool]) -> None:
        """Once the child has started: close its ends here and serve it in a daemon thread."""
        for fd in self.child_fds():
            os.close(fd)
        self._served = True
        self._thread = threading.Thread(target=self._loop, args=(alive,), name="kernelevolve-builds", daemon=True)
        self._thread.start()

    def join(self, timeout_s: float = 5.0) -> None:
        """Wait for the serving thread to end (its child is dead: a build it ran is stopped and cleaned up)."""
        if self._thread is not None:
            self._thread.join(timeout_s)

    def close(self) -> None:
        """Without a child (it failed to start): close every end. Once served, the thread owns them."""
        if self._served:
            return
        for fd in (*self.child_fds(), self._requests, self._replies):
            with contextlib.suppress(OSError):
                os.close(fd)

    def _loop(self, alive: Callable[[], bool]) -> None:
        buffer = b""
        try:
            while True:
                chunk = os.read(self._requests, 65536)
                if not chunk:
                    return
                buffer += chunk
                while b"\n" in buffer:
                    line, buffer = buffer.split(b"\n", 1)
                    try:
                        request = json.loads(line)
                        reply = self.service.build(request, alive) if isinstance(request, dict) else None
                    except Exception as e:  # noqa: BLE001 - one request failing must not end the service
                        reply = {"ok": False, "log": f"the build failed in the harness: {type(e).__name__}: {e}"}
                    reply = reply or {"ok": False, "log": "malformed build request"}
                    data = (json.dumps(reply) + "\n").encode()
                    while data:
                        data = data[os.write(self._replies, data) :]
        except OSError:  # the child is gone
            return
        finally:
            for fd in (self._requests, self._replies):
                with contextlib.suppress(OSError):
                    os.close(fd)
