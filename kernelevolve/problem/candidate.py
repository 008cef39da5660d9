"""Candidate files: which kernel languages they use (from the AST, without running them), and loading."""

from __future__ import annotations

import ast
import types
from pathlib import Path

from kernelevolve.problem.diagnostics import BuildFailure, candidate_frames
from kernelevolve.problem.problem import exec_file

BUILD_REASON_CHARS = 6000


class CandidateLoadError(Exception):
    """The candidate could not be loaded (syntax error, failed import or build, no ModelNew)."""


def detect_languages(source: str) -> list[str]:
    """Kernel languages in a candidate: 'triton', 'cuda', 'cpp', or 'pytorch' when none.

    CUDA sources also cover HIP: on ROCm builds torch hipifies `cuda_sources` when it compiles them."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return []
    langs: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            mods = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module or ""]
            if any(m == "triton" or m.startswith("triton.") for m in mods):
                langs.add("triton")
        elif isinstance(node, ast.Call) and _call_name(node.func) in ("load_inline", "load"):
            kws = {k.arg: k.value for k in node.keywords}
            if "cuda_sources" in kws or _truthy(kws.get("with_cuda")):
                langs.add("cuda")
            elif "cpp_sources" in kws:
                langs.add("cpp")
            elif "sources" in kws:  # cpp_extension.load(name, sources=[...files])
                files = ast.unparse(kws["sources"])
                langs.add("cuda" if ".cu" in files else "cpp")
    return sorted(langs) or ["pytorch"]


def _truthy(node: ast.expr | None) -> bool:
    return isinstance(node, ast.Constant) and bool(node.value)


def _call_name(func: ast.expr) -> str:
    if isinstance(func, ast.Attribute):
        return func.attr
    if isinstance(func, ast.Name):
        return func.id
    return ""


def read_source(path: str | Path) -> str:
    """The candidate's text; CandidateLoadError where it is not Python source (not UTF-8, or NUL bytes)."""
    data = Path(path).read_bytes()
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise CandidateLoadError(
            f"the candidate is not UTF-8 text (byte 0x{data[e.start]:02x} at offset {e.start}): a kernel file must "
            "be Python source"
        ) from None
    if "\x00" in text:
        raise CandidateLoadError(
            f"the candidate holds a NUL byte (offset {text.index(chr(0))}): a kernel file must be Python source"
        )
    return text


def load_candidate(path: str | Path) -> types.ModuleType:
    """Execute the candidate file as its own module; raises CandidateLoadError with the cause."""
    p = Path(path)
    try:
        code = compile(read_source(p), str(p), "exec")
    except SyntaxError as e:
        shown = f"\n    {e.text.strip()}" if e.text and e.text.strip() else ""
        raise CandidateLoadError(f"syntax error at line {e.lineno}: {e.msg}{shown}") from e
    try:
        module = exec_file(p, "candidate", code)
    except BaseException as e:  # noqa: BLE001 - a build failure, import error or SystemExit
        raise CandidateLoadError(_load_failure(e, str(p))) from e
    if not isinstance(module.__dict__.get("ModelNew"), type):
        own = sorted(k for k, v in vars(module).items() if isinstance(v, type) and v.__module__ == module.__name__)
        raise CandidateLoadError(
            "the candidate does not define class ModelNew" + (f" (its classes: {', '.join(own)})" if own else "")
        )
    return module


def _load_failure(e: BaseException, path: str) -> str:
    """Why the candidate's module failed: a build's diagnosis as it is (the compiler's errors first), else the
    exception and the candidate's own frames of its traceback (not the harness's, not torch's)."""
    if isinstance(e, BuildFailure):
        return _first_lines(e, BUILD_REASON_CHARS)
    frames = candidate_frames(e, path)
    return f"loading the candidate raised {type(e).__name__}: {_first_lines(e)}" + (f"\n{frames}" if frames else "")


def _first_lines(e: BaseException, limit: int = 2000) -> str:
    text = str(e)
    return text if len(text) <= limit else text[:limit] + " ..."
