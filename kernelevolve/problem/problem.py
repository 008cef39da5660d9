"""Problem files: KernelBench-format modules plus the optional SHAPE_CASES, CHECK_CASES, TOLERANCE, DTYPE, FLOPS
and TARGET_SPEEDUP.

The parent process only reads and statically checks the file (no torch import, no code run); the
worker executes it in a private namespace before any candidate code is loaded.
"""

from __future__ import annotations

import ast
import hashlib
import threading
import types
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

REQUIRED = ("Model", "get_inputs", "get_init_inputs")


class ProblemError(Exception):
    """The problem file is malformed or unusable: a usage error (exit status 2)."""


@dataclass(frozen=True)
class Problem:
    path: Path
    source: str

    @property
    def hash(self) -> str:
        """Identity of the problem: the hash of its source with comments and formatting normalised away."""
        return source_hash(self.source)

    @property
    def name(self) -> str:
        return self.path.stem if self.path.stem != "problem" else self.path.parent.name


# CPython 3.11 counts the depth of the AST objects it builds or reads in one per-interpreter field: two threads
# converting at once (a thread switch mid-way) corrupt it, and the conversion fails with "SystemError: AST
# constructor recursion depth mismatch" (python/cpython#106905). The search runs operators in threads, so every
# conversion in the agent's process goes through this lock.
AST_LOCK = threading.Lock()


def parse(source: str, filename: str = "<unknown>") -> ast.Module:
    """ast.parse, one thread at a time (AST_LOCK)."""
    with AST_LOCK:
        return ast.parse(source, filename=filename)


def source_hash(source: str) -> str:
    try:
        normal = ast.unparse(parse(source))
    except SyntaxError:
        normal = source
    return hashlib.sha256(normal.encode()).hexdigest()[:16]


def load_problem(path: str | Path) -> Problem:
    """Read and statically validate a problem file; raises ProblemError naming the file and the fault."""
    p = Path(path)
    if not p.is_file():
        raise ProblemError(f"{p}: no such problem file")
    try:
        source = p.read_text()
    except (OSError, UnicodeDecodeError) as e:
        raise ProblemError(f"{p}: cannot read the problem file ({e})") from e
    try:
        tree = parse(source, filename=str(p))
    except SyntaxError as e:
        raise ProblemError(f"{p}:{e.lineno}: syntax error in the problem file: {e.msg}") from e
    defined = _top_level_names(tree)
    missing = [n for n in REQUIRED if n not in defined]
    if missing:
        raise ProblemError(
            f"{p}: the problem file does not define {', '.join(missing)} "
            "(a problem needs class Model(nn.Module), get_inputs() and get_init_inputs())"
        )
    return Problem(path=p.resolve(), source=source)


@dataclass(frozen=True)
class TargetSpeedup:
    """A speedup over eager the problem's author expects on one shape case (a paper's figure, a service's need);
    `bench` reports whether it is met."""

    speedup: float
    case: int = 0
    note: str = ""


MISSING = object()


def literal(tree: ast.Module, name: str) -> object:
    """The value of a top-level `name = <literal>`, read without running the file: MISSING when there is none;
    ValueError when the value is not a literal. The one reader of a problem's literals (TARGET_SPEEDUP here,
    SHAPE_CASES for the LLM's prompt too)."""
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == name for t in node.targets):
            try:
                return ast.literal_eval(node.value)
            except (ValueError, TypeError) as e:
                raise ValueError(str(e) or "not a literal") from e
    return MISSING


def target_speedup(problem: Problem) -> TargetSpeedup | None:
    """The problem's TARGET_SPEEDUP, read statically (the parent never executes the problem): a literal dict
    {"speedup": 4.0, "case": 1, "note": "..."}; case indexes SHAPE_CASES (default 0, the primary case), checked
    against SHAPE_CASES where that is a literal list too, so a wrong index fails before any evaluation."""
    tree = parse(problem.source)
    try:
        value = literal(tree, "TARGET_SPEEDUP")
    except ValueError as e:
        raise ProblemError(f"{problem.path}: TARGET_SPEEDUP must be a literal dict ({e})") from e
    if value is MISSING:
        return None
    ok = (
        isinstance(value, dict)
        and set(value) <= {"speedup", "case", "note"}
        and isinstance(value.get("speedup"), (int, float))
        and value["speedup"] > 0
        and isinstance(value.get("case", 0), int)
        and value.get("case", 0) >= 0
        and isinstance(value.get("note", ""), str)
    )
    if not ok:
        raise ProblemError(
            f"{problem.path}: TARGET_SPEEDUP must be a dict like "
            '{"speedup": 4.0, "case": 1, "note": "the paper\'s figure"} (speedup > 0 over eager; case: an '
            "index into SHAPE_CASES)"
        )
    case = value.get("case", 0)
    try:
        cases = literal(tree, "SHAPE_CASES")
    except ValueError:
        cases = None  # built by code: bench's row says when the index names no case
    n_cases = 1 if cases is MISSING else len(cases) if isinstance(cases, list) else None
    if n_cases is not None and case >= n_cases:
        raise ProblemError(
            f"{problem.path}: TARGET_SPEEDUP's case {case} is not a shape case (SHAPE_CASES has {n_cases}; "
            "cases count from 0)"
        )
    return TargetSpeedup(float(value["speedup"]), case, value.get("note", ""))


def _top_level_names(tree: ast.Module) -> set[str]:
    names: set[str] = set()
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, ast.Assign):
            names.update(t.id for t in node.targets if isinstance(t, ast.Name))
        elif isinstance(node, (ast.AnnAssign, ast.AugAssign)) and isinstance(node.target, ast.Name):
            names.add(node.target.id)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names.update((a.asname or a.name).split(".")[0] for a in node.names)
    return names


# ---- worker side: executing the problem ---------------------------------------------------------


def exec_file(path: str | Path, name: str, code: types.CodeType | None = None) -> types.ModuleType:
    """Execute a Python file as a private module called `name`, with `__file__` set, and return it. It is never
    entered in sys.modules, so nothing else in the process can import it. `code` is the file already compiled (a
    caller that reports syntax errors apart from what the code raises); without it the file is read and compiled
    here. Whatever reading, compiling or executing raises propagates."""
    p = Path(path)
    if code is None:
        code = compile(p.read_text(), str(p), "exec")
    module = types.ModuleType(name)
    module.__file__ = str(p)
    exec(code, module.__dict__)
    return module


def exec_problem(problem_path: str | Path) -> types.ModuleType:
    """Execute the problem file as a private module (not in sys.modules, so candidates cannot import it)."""
    p = Path(problem_path)
    try:
        module = exec_file(p, "kernelevolve_problem")
    except Exception as e:  # noqa: BLE001 - any failure of the user's file is a problem error
        raise ProblemError(f"{p}: executing the problem file failed: {type(e).__name__}: {e}") from e
    for name in REQUIRED:
        if not hasattr(module, name):
            raise ProblemError(f"{p}: the problem file does not define {name}")
    return module


def shape_cases(module: types.ModuleType) -> list[dict[str, Any]]:
    """The problem's shape cases; one empty case (the module's own constants) without SHAPE_CASES."""
    cases = getattr(module, "SHAPE_CASES", None)
    if cases is None:
        return [{}]
    return _cases(module, "SHAPE_CASES", cases, allow_empty=False)


def check_cases(module: types.ModuleType, device_type: str | None = None) -> list[dict[str, Any]]:
    """The problem's CHECK_CASES: cases judged for correctness like shape cases, never timed (an operator's edge
    cases: odd layouts, empty tensors, scalars, half precision; docs/cli.md, "Problems and candidates"). [] without
    it. With `device_type` ('cpu', 'cuda'), only those for that device: a case that binds DEVICE_TYPES to a list
    without it (a half-precision sample on a GPU) is left out."""
    cases = getattr(module, "CHECK_CASES", None)
    cases = [] if cases is None else _cases(module, "CHECK_CASES", cases, allow_empty=True)
    if device_type is None:
        return cases
    every = getattr(module, "DEVICE_TYPES", None)
    return [c for c in cases if _for_device(module, c.get("DEVICE_TYPES", every), device_type)]


def _for_device(module: types.ModuleType, device_types: Any, device_type: str) -> bool:
    if device_types is None:
        return True
    if not isinstance(device_types, (list, tuple)) or not all(isinstance(d, str) for d in device_types):
        raise ProblemError(f"{module.__file__}: DEVICE_TYPES must be None or a list of device types, e.g. ['cuda']")
    return device_type in device_types


def _cases(module: types.ModuleType, name: str, cases: Any, allow_empty: bool) -> list[dict[str, Any]]:
    if (
        not isinstance(cases, (list, tuple))
        or not (cases or allow_empty)
        or not all(isinstance(c, dict) for c in cases)
    ):
        raise ProblemError(f"{module.__file__}: {name} must be a {'' if allow_empty else 'non-empty '}list of dicts")
    for case in cases:
        unknown = [k for k in case if not hasattr(module, k)]
        if unknown:
            raise ProblemError(
                f"{module.__file__}: {name} names {', '.join(unknown)}, which the module does not define"
            )
    return [dict(c) for c in cases]


def bind_case(module: types.ModuleType, case: dict[str, Any], defaults: dict[str, Any]) -> dict[str, Any]:
    """Re-bind the module's size constants for one case; returns the full set of constants in effect."""
    for key, value in defaults.items():
        setattr(module, key, value)
    for key, value in case.items():
        setattr(module, key, value)
    return {k: getattr(module, k) for k in case} if case else {}


def each_shape_case(module: types.ModuleType) -> Iterator[dict[str, Any]]:
    """Each shape case with its constants bound in the module, the module's own constants restored after the last
    (or when the caller stops early)."""
    cases = shape_cases(module)
    defaults = case_defaults(module, cases)
    try:
        for case in cases:
            bind_case(module, case, defaults)
            yield case
    finally:
        bind_case(module, {}, defaults)


def case_defaults(module: types.ModuleType, cases: list[dict[str, Any]]) -> dict[str, Any]:
    """The original values of every constant any case re-binds (CHECK_CASES' too), to restore between cases."""
    keys = {k for c in [*cases, *check_cases(module)] for k in c}
    return {k: getattr(module, k) for k in keys}


def tolerance(module: types.ModuleType, dtype_name: str) -> tuple[float, float]:
    """(atol, rtol): the problem's TOLERANCE, else per-dtype defaults."""
    tol = getattr(module, "TOLERANCE", None)
    if tol is not None:
        if not isinstance(tol, dict) or not {"atol", "rtol"} <= set(tol):
            raise ProblemError(f"{module.__file__}: TOLERANCE must be a dict with 'atol' and 'rtol'")
        return float(tol["atol"]), float(tol["rtol"])
    if dtype_name in ("float16", "bfloat16"):
        return 1e-2, 1e-2
    return 1e-4, 1e-4


def problem_flops(module: types.ModuleType) -> float | None:
    """The problem's FLOPS for the bound case (a number, or a function of no arguments reading the module's
    constants), for the roofline bound; None when it declares none."""
    flops = getattr(module, "FLOPS", None)
    if flops is None:
        return None
    try:
        value = float(flops() if callable(flops) else flops)
    except Exception as e:  # noqa: BLE001
        raise ProblemError(f"{module.__file__}: FLOPS must be a number or a function returning one ({e})") from e
    if not value >= 0:
        raise ProblemError(f"{module.__file__}: FLOPS must be a non-negative number, got {value!r}")
    return value
