"""C++/CUDA extensions are built by the harness, once per source, and only loaded by the candidate's process.

`install` wraps `torch.utils.cpp_extension.load_inline` and `load` in the process that runs candidate code: a
wrapped call builds nothing itself, it sends a build request (`request_of`) keyed by everything that affects the
binary (`key`) to the parent's build service (eval/builds/service.py) and loads the result from the read-only
cache. The design, and why candidates can neither replace nor half-build a folder: docs/architecture.md
("Extensions are built by the harness, once per C++ source"); what users see: docs/cli.md ("Extensions").
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import importlib.metadata
import importlib.util
import inspect
import json
import os
import re
import shlex
import shutil
import sys
import tempfile
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from kernelevolve.eval.builds import reaper
from kernelevolve.eval.wire import BUILD_FDS_ENV
from kernelevolve.platforms.base import cache_dir
from kernelevolve.platforms.peaks import public_version
from kernelevolve.problem.diagnostics import BuildFailure, build_failure

BUILT = ".kernelevolve-built"  # the last file the build service writes into a staging folder before the rename

# The stage report of the worker (eval/worker/harness.py): called with a build's name when it starts and with
# None when it ends. The worker reports `extension build NAME` meanwhile, and the evaluator gives that stage the
# compile deadline (--compile-timeout) instead of the candidate's.
BuildReport = Callable[[str | None], None]
BUILD_STAGE = "extension build"

KINDS = ("load_inline", "load")
_UNKEYED = ("verbose", "build_directory")  # neither changes the binary; the build service chooses the folder

# torch's header, which every load_inline source begins with, precompiled once per flag set: a build that finds it
# parses none of torch's headers. The build service keeps them under extensions/HEADERS and names the one a build
# uses in the request's PRECOMPILED field (its own: a candidate's is dropped); the compiler takes it only where the
# flags match, and parses the header as before where they do not.
HEADERS = ".headers"
PRECOMPILED = "precompiled"
TORCH_HEADER = ("torch", "extension.h")
_HEADER_KEYED = ("extra_cflags", "extra_include_paths")  # what torch's compile flags vary with, for C++


class BuildError(BuildFailure):
    """The harness could not build the extension (the compiler's diagnostics are in the message)."""


GENERATED_SUFFIXES = (".cpp", ".cc", ".cxx", ".cu", ".hip", ".sycl")
GENERATED_MAX_BYTES = 1 << 20


def generated_sources(folder: Path, log: str) -> dict[str, str]:
    """The sources torch wrote into a build folder (main.cpp, cuda.cu) that a failed build's log names, by path:
    what lets its errors be placed in the candidate's own file."""
    out = {}
    for path in sorted(folder.iterdir()) if folder.is_dir() else []:
        if path.suffix in GENERATED_SUFFIXES and path.name in log and path.is_file() and not path.is_symlink():
            if path.stat().st_size <= GENERATED_MAX_BYTES:
                out[str(path)] = path.read_text(errors="replace")
    return out


def build_failed(name: str, log: str, generated: dict[str, str] | None, caller: str) -> BuildError:
    """The error a failed build raises in the caller: the compiler's errors placed in the file that called
    load_inline where its sources are strings there (caller: that file's path), the command once."""
    try:
        candidate = (caller, Path(caller).read_text()) if caller else None
    except (OSError, UnicodeDecodeError):
        candidate = None
    return BuildError(build_failure(name, log, generated, candidate))


def build_stage(name: str) -> str:
    return f"{BUILD_STAGE} {name}"


def is_build_stage(stage: str) -> bool:
    return stage.startswith(BUILD_STAGE + " ")


def extensions_root() -> Path:
    return cache_dir() / "extensions"


def request_of(kind: str, arguments: dict[str, Any]) -> dict[str, Any]:
    """A wrapped call (its arguments by name) as a JSON-able build request: {"kind", "kwargs", "files"}; `load`'s
    source files are carried as text (the build service writes them into its staging folder), since the caller's
    files, in its private temporary folder perhaps, are not visible there."""
    if kind not in KINDS:
        raise ValueError(f"unknown extension call {kind!r}")
    named = {k: v for k, v in arguments.items() if k not in _UNKEYED}
    files: dict[str, str] = {}
    if kind == "load":
        sources = named.get("sources")
        paths = [sources] if isinstance(sources, str) else list(sources or [])
        names = []
        for i, path in enumerate(paths):
            base = f"{i}-{Path(path).name}"  # two sources of one base name stay two files
            files[base] = _text(Path(path))
            names.append(base)
        for header in _headers_beside(paths):  # `#include "common.cuh"` next to a source finds it in staging too
            files.setdefault(header.name, _text(header))
        named["sources"] = names
    for field in ("cpp_sources", "cuda_sources", "sycl_sources"):
        if isinstance(named.get(field), str):
            named[field] = [named[field]]
    return {"kind": kind, "kwargs": json.loads(json.dumps(named, default=str)), "files": files}


@functools.cache
def _torch() -> tuple[str, str]:
    """Which torch builds are for, torch-free (the parent asks too): its release and where it is installed."""
    try:
        release = public_version(importlib.metadata.version("torch"))
    except importlib.metadata.PackageNotFoundError:
        release = ""
    spec = importlib.util.find_spec("torch")
    return release, str(spec.origin if spec else "")


HEADER_SUFFIXES = (".h", ".hh", ".hpp", ".hxx", ".cuh", ".inc", ".inl")
HEADERS_MAX_BYTES = 4 << 20


def _text(path: Path) -> str:
    try:
        return path.read_text()
    except (OSError, UnicodeDecodeError) as e:
        raise BuildError(f"cannot read the extension source {path}: {e}") from e


def _headers_beside(sources: list[str]) -> list[Path]:
    """The headers in the folders of `load`'s sources (the build step sees none of the caller's folders)."""
    found, size = [], 0
    for folder in dict.fromkeys(Path(p).resolve().parent for p in sources):
        try:
            entries = sorted(folder.iterdir())
        except OSError:
            continue
        for path in entries:
            if path.suffix in HEADER_SUFFIXES and path.is_file():
                size += path.stat().st_size
                if size > HEADERS_MAX_BYTES:
                    raise BuildError(f"the headers beside {sources[0]} exceed {HEADERS_MAX_BYTES >> 20} MB")
                found.append(path)
    return found


def key(request: dict[str, Any]) -> str:
    """The build's name in the cache: the hash of the request and the torch it builds against."""
    material = {**request, "torch": _torch()}
    blob = json.dumps(material, sort_keys=True, default=str).encode()
    return hashlib.sha256(blob).hexdigest()[:20]


def header_request(request: dict[str, Any]) -> dict[str, Any] | None:
    """The precompiled header a build request can use, as a request of its own (one per flag set, whatever the
    sources), or None: only a C++ load_inline on Linux begins with torch's header (CUDA and SYCL builds compile
    it with their own compilers; `load`'s files and executables include what they choose)."""
    kw = request.get("kwargs")
    if request.get("kind") != "load_inline" or not isinstance(kw, dict) or not sys.platform.startswith("linux"):
        return None
    if any(kw.get(k) for k in ("cuda_sources", "sycl_sources", "with_cuda", "no_implicit_headers", "is_standalone")):
        return None
    flags = {k: kw[k] for k in _HEADER_KEYED if kw.get(k) is not None}
    return {"kind": "header", "kwargs": flags, "cxx": os.environ.get("CXX", "")}


def build_header(request: dict[str, Any], folder: Path) -> str:
    """Precompile torch's header into folder for header_request's flags: the compiler and compile flags of torch's
    own build file for a load_inline of those flags (less the extension's name), then a check that the compiler
    takes the result for that header. '' when it does; else why not, and nothing is left (only GCC reads these)."""
    from torch.utils import cpp_extension

    compiler = cpp_extension.get_cxx_compiler()
    if not cpp_extension.check_compiler_is_gcc(compiler):
        return f"{compiler} is not GCC"
    with tempfile.TemporaryDirectory() as tmp:
        kw = {**request["kwargs"], "name": "kernelevolve_header", "cpp_sources": [""], "build_directory": tmp}
        load_inline = getattr(cpp_extension.load_inline, "__wrapped__", cpp_extension.load_inline)
        with _stubbed(cpp_extension, ("_run_ninja_build", "_import_module_from_library", PCH_REMOVAL)):
            load_inline(**kw)  # writes torch's build file; builds and loads nothing
        cxx, flags = _compile_command(Path(tmp) / "build.ninja")
    flags = [f for f in flags if not f.startswith("-DTORCH_EXTENSION_NAME=")]
    target = folder.joinpath(*TORCH_HEADER[:-1], TORCH_HEADER[-1] + ".gch")
    target.parent.mkdir(parents=True, exist_ok=True)
    source = Path(cpp_extension._TORCH_PATH, "include", *TORCH_HEADER)
    # Its text beside it: the compiler reads a header whose precompiled form it took from this folder here, when a
    # source includes it again (the pragma once), and here too when it refuses the precompiled form.
    shutil.copyfile(source, folder.joinpath(*TORCH_HEADER))
    code, said = reaper.run([*cxx, "-x", "c++-header", str(source), "-o", str(target), *flags])
    if code != 0:
        shutil.rmtree(target.parent)
        return f"the compiler refused torch's header with these flags:\n{said.decode(errors='replace')[-4000:]}"
    include = f"#include <{'/'.join(TORCH_HEADER)}>\n".encode()
    _, said = reaper.run([*cxx, "-x", "c++", "-fsyntax-only", "-H", f"-I{folder}", *flags, "-"], stdin=include)
    lines = said.decode(errors="replace").splitlines()
    if not any(line.startswith("! ") and line.endswith(TORCH_HEADER[-1] + ".gch") for line in lines):
        shutil.rmtree(target.parent)
        return "the compiler does not take the precompiled header:\n" + "\n".join(lines[:20])
    return ""


def _compile_command(build_file: Path) -> tuple[list[str], list[str]]:
    """The compiler and the flags of a torch build file's compile rule (`$cxx ... $cflags -c $in ... $post_cflags`)."""
    values: dict[str, str] = {}
    for line in build_file.read_text().splitlines():
        name, eq, value = line.partition(" = ")
        if eq and name in ("cxx", "cflags", "post_cflags"):
            values[name] = value.replace("$$", "$").replace("$ ", " ")
    if "cxx" not in values or "cflags" not in values:
        raise BuildError(f"torch's build file {build_file} has no compile rule this harness knows")
    return shlex.split(values["cxx"]), shlex.split(values["cflags"]) + shlex.split(values.get("post_cflags", ""))


@contextlib.contextmanager
def _stubbed(module: Any, names: tuple[str, ...]) -> Iterator[None]:
    """The module's functions of those names (those it has) do nothing while inside."""
    saved = {name: getattr(module, name) for name in names if hasattr(module, name)}
    for name in saved:
        setattr(module, name, lambda *args, **kwargs: None)
    try:
        yield
    finally:
        for name, original in saved.items():
            setattr(module, name, original)


def built(root: Path, build_key: str) -> Path | None:
    """The complete build of that key, or None."""
    folder = root / build_key
    return folder if (folder / BUILT).is_file() else None


def load_built(request: dict[str, Any], folder: Path) -> Any:
    """What torch's call would have returned, from the built folder: the module, the library's path (not a Python
    module) or the executable's path (standalone)."""
    from torch.utils import cpp_extension

    kw = request["kwargs"]
    name = kw["name"]
    if kw.get("is_standalone"):
        return cpp_extension._get_exec_path(name, str(folder))
    return cpp_extension._import_module_from_library(name, str(folder), kw.get("is_python_module", True))


def _cuda_arch() -> str:
    """The GPU's compute capability ("9.0"), which the build step compiles for (TORCH_CUDA_ARCH_LIST) without
    asking a GPU itself; the caller's own TORCH_CUDA_ARCH_LIST where set; "" without CUDA."""
    from kernelevolve.platforms import get_platform

    chosen = os.environ.get("TORCH_CUDA_ARCH_LIST", "")
    return chosen or get_platform("cuda").build_arch()


Channel = tuple[int, int]  # (the descriptor requests go to, the one replies come from)


def take_channel() -> Channel | None:
    """The pipes to the build service this process was given, taken out of the environment (the processes it
    starts do not inherit the descriptors, and must not find their numbers)."""
    raw = os.environ.pop(BUILD_FDS_ENV, "")
    try:
        request_fd, reply_fd = (int(x) for x in raw.split(","))
    except ValueError:
        return None
    return request_fd, reply_fd


def _ask(channel: Channel, request: dict[str, Any]) -> dict[str, Any]:
    """One request to the build service and its reply (one JSON line each way)."""
    request_fd, reply_fd = channel
    data = (json.dumps(request) + "\n").encode()
    while data:
        data = data[os.write(request_fd, data) :]
    line = b""
    while not line.endswith(b"\n"):
        chunk = os.read(reply_fd, 65536)
        if not chunk:
            raise BuildError("the harness's build service went away before it answered")
        line += chunk
    return json.loads(line)


PCH_REMOVAL = "remove_extension_h_precompiler_headers"
ARCH = re.compile(r"[A-Za-z0-9.+]+([; ][A-Za-z0-9.+]+)*")  # "9.0", "8.0;9.0+PTX", "Hopper"


def build_into(request: dict[str, Any], folder: Path) -> None:
    """Build the request into folder with torch's load_inline / load, without importing what was built."""
    from torch.utils import cpp_extension

    arch = str(request.get("arch") or "")
    if arch:
        if not ARCH.fullmatch(arch):
            raise ValueError(f"not a CUDA architecture list: {arch!r}")
        os.environ["TORCH_CUDA_ARCH_LIST"] = arch
    kw = dict(request["kwargs"])
    files = request.get("files") or {}
    for name, text in files.items():
        (folder / Path(name).name).write_text(text)
    if request["kind"] == "load":
        kw["sources"] = [str(folder / Path(name).name) for name in kw.get("sources", [])]
    kw["build_directory"] = str(folder)
    header = request.get(PRECOMPILED)
    if header:  # searched first: the compiler finds torch/extension.h.gch there before torch's own folders
        paths = kw.get("extra_include_paths") or []
        kw["extra_include_paths"] = [str(header), *([paths] if isinstance(paths, str) else paths)]
    # torch's precompiled header lives in torch's own folder, read-only here: load_inline with use_pch writes it
    # there, and without use_pch deletes one found there (left by any earlier use_pch), failing every build.
    # The binary is the same either way, so neither happens.
    kw.pop("use_pch", None)
    call = getattr(cpp_extension, request["kind"])
    call = getattr(call, "__wrapped__", call)  # torch's own, where this process wrapped it (extension_cache)
    run_ninja = cpp_extension._run_ninja_build

    def reaped(build_directory: str, *args: Any, **kwargs: Any) -> None:  # each compiler's group dies with it
        reaper.wrap_build_file(build_directory)
        run_ninja(build_directory, *args, **kwargs)

    with _stubbed(cpp_extension, ("_import_module_from_library", PCH_REMOVAL)):
        cpp_extension._run_ninja_build = reaped
        try:
            call(**kw)
        finally:
            cpp_extension._run_ninja_build = run_ninja


def _build_here(request: dict[str, Any], caller: str) -> Path:
    """No build service (a script that wraps torch itself): build in a private folder no other process loads."""
    folder = Path(tempfile.mkdtemp(prefix="kernelevolve-extension-"))
    try:
        build_into(request, folder)
    except RuntimeError as e:  # torch's "Error building extension 'NAME': what the compiler said"
        log = str(e)
        raise build_failed(request["kwargs"]["name"], log, generated_sources(folder, log), caller) from None
    return folder


def install(root: Path | None = None, report: BuildReport | None = None, channel: Channel | None = None) -> None:
    """Wrap torch.utils.cpp_extension.load_inline / load in this process (before any candidate code runs).

    root: where complete builds are looked up (default: the cache's `extensions`). report: told when each build
    starts (its name) and ends (None), so the evaluator can give builds the compile deadline. channel: the build
    service's pipes (`take_channel`); without one, a build missing from the cache is made in a private folder."""
    from torch.utils import cpp_extension

    base = root or extensions_root()
    versions: dict[str, dict[str, str]] = {}  # name -> {key of the request as called: the name it loads under}
    here: dict[str, Path] = {}  # key -> folder, for builds made in this process (no build service)
    lock = threading.Lock()  # one request at a time on the pipes: candidates build from threads too

    def fetch(request: dict[str, Any], caller: str) -> Path:
        with lock:
            return _fetch(request, caller)

    def _fetch(request: dict[str, Any], caller: str) -> Path:
        kw = request["kwargs"]
        seen = versions.setdefault(kw["name"], {})
        as_called = key(request)
        if as_called not in seen:  # as torch does: another build under one name loads as NAME_vN
            seen[as_called] = kw["name"] if not seen else f"{kw['name']}_v{len(seen)}"
        kw["name"] = seen[as_called]
        build_key = key(request)
        folder = built(base, build_key) or here.get(build_key)
        if folder is not None:
            return folder
        if channel is None:
            here[build_key] = _build_here(request, caller)
            return here[build_key]
        reply = _ask(channel, request)
        if not reply.get("ok"):
            raise build_failed(kw["name"], str(reply.get("log", "")), reply.get("sources"), caller)
        return Path(reply["folder"])

    for kind in KINDS:
        original = getattr(cpp_extension, kind)
        if getattr(original, "_kernelevolve_cached", False):
            continue
        signature = inspect.signature(original)

        @functools.wraps(original)
        def wrapper(*args: Any, _kind=kind, _signature=signature, **kwargs: Any) -> Any:
            caller = sys._getframe(1).f_code.co_filename  # the file whose sources a compile error is placed in
            request = request_of(_kind, _signature.bind(*args, **kwargs).arguments)
            request["arch"] = _cuda_arch()
            if report is not None:
                report(request["kwargs"]["name"])
            try:
                return load_built(request, fetch(request, caller))
            finally:
                if report is not None:
                    report(None)

        wrapper._kernelevolve_cached = True  # type: ignore[attr-defined]
        setattr(cpp_extension, kind, wrapper)
