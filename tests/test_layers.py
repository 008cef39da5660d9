"""The package's layers, read from its imports (ast; function-level imports included): no import circle anywhere,
and the evaluation's processes import across their folders only as docs/architecture.md draws them."""

from __future__ import annotations

import ast
from pathlib import Path

from tests.conftest import ROOT

PACKAGE = ROOT / "kernelevolve"

# What the worker's processes (the judge and the candidate's) may import of the package besides their own folder:
# the contract with the parent, the rules, the build client, the environment facts, and the ground floor.
WORKER_MAY_IMPORT = (
    "kernelevolve.eval.wire",
    "kernelevolve.eval.rules",
    "kernelevolve.eval.builds.extension_cache",
    "kernelevolve.eval.environment",
    "kernelevolve.eval.worker",
    "kernelevolve.problem",
    "kernelevolve.platforms",
    "kernelevolve.result",
)
PACKAGES = ("kernelevolve", "kernelevolve.eval", "kernelevolve.eval.builds")  # their __init__ imports nothing
# The parent's side of evaluation: it never imports torch at module level, nor the worker's folder.
PARENT_SIDE = (
    "kernelevolve.eval.wire",
    "kernelevolve.eval.launch",
    "kernelevolve.eval.builds.service",
    "kernelevolve.eval.evaluator",
    "kernelevolve.eval.acceptance",
    "kernelevolve.eval.holders",
)


def _modules() -> dict[str, Path]:
    found = {}
    for path in PACKAGE.rglob("*.py"):
        if "knowledge" in path.relative_to(PACKAGE).parts:  # the knowledge base's code samples
            continue
        name = ".".join(path.relative_to(ROOT).with_suffix("").parts)
        found[name.removesuffix(".__init__")] = path
    return found


def _imports(path: Path, modules: dict[str, Path], top_level_only: bool = False) -> set[str]:
    """The package's modules (and packages) a file imports; `torch` too, as 'torch'."""
    tree = ast.parse(path.read_text())
    nodes = tree.body if top_level_only else ast.walk(tree)
    out: set[str] = set()
    for node in nodes:
        names: list[str] = []
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = [f"{node.module}.{a.name}" for a in node.names] + [node.module]
        elif isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        for name in names:
            if name == "torch" or name.startswith("torch."):
                out.add("torch")
            while name.startswith("kernelevolve") and name not in modules:
                name = name.rpartition(".")[0]
            if name in modules:
                out.add(name)
    return out


def _graph(top_level_only: bool = False) -> dict[str, set[str]]:
    modules = _modules()
    graph = {}
    for name, path in modules.items():
        graph[name] = _imports(path, modules, top_level_only) - {name}
    return graph


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan's algorithm, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for start in graph:
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start] & graph.keys())))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child] & graph.keys()))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def _within(name: str, prefixes: tuple[str, ...]) -> bool:
    return any(name == p or name.startswith(p + ".") for p in prefixes)


def test_the_package_has_no_import_circle():
    assert _cycles(_graph()) == []


def test_the_cycle_finder_finds_a_circle():
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_the_worker_imports_only_the_wire_the_build_client_and_the_ground_floor():
    graph = _graph()
    crossing = {
        (name, dep)
        for name, deps in graph.items()
        if _within(name, ("kernelevolve.eval.worker",))
        for dep in deps
        if dep != "torch" and not _within(dep, WORKER_MAY_IMPORT) and dep not in PACKAGES
    }
    assert not crossing, sorted(crossing)


def test_the_parent_side_imports_neither_torch_nor_the_worker():
    """Module-level imports, followed through the package: the evaluator's process never imports torch by merely
    importing these (a function that needs torch imports it where it runs, in a worker)."""
    graph = _graph(top_level_only=True)
    for name in [n for n in graph if _within(n, PARENT_SIDE)]:
        seen, todo = set(), [name]
        while todo:
            current = todo.pop()
            if current in seen:
                continue
            seen.add(current)
            todo.extend(graph.get(current, ()))
        assert "torch" not in seen, f"{name} imports torch at module level (through the package)"
        assert not any(_within(s, ("kernelevolve.eval.worker",)) for s in seen), name


def test_the_wire_and_the_rules_import_nothing_of_the_package():
    graph = _graph()
    for name in ("kernelevolve.eval.wire", "kernelevolve.eval.rules"):
        assert not {d for d in graph[name] if d.startswith("kernelevolve")}, name


def test_no_function_in_the_package_is_over_80_lines():
    """A function that long does several jobs (the knowledge base's code samples aside)."""
    long = []
    for name, path in _modules().items():
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.end_lineno - node.lineno >= 80:
                long.append(f"{name}.{node.name}: {node.end_lineno - node.lineno + 1} lines")
    assert not long, long


# What counts as a device-type test: a comparison with a target's or a torch device type's name (not a kernel
# language's: `kind == "cuda"` names a source), a CUDA call through torch, or a tensor's `is_cuda`.
TARGET_WORDS = {"cpu", "cuda", "rocm", "hip"}
NOT_A_TARGET = ("kind", "lang")  # a source's kind, a list of languages
# Outside platforms/, at most this many modules may still test the device's type (docs/platforms.md).
MOST_MODULES_WITH_DEVICE_TESTS = 3


def _device_tests(tree: ast.AST) -> list[int]:
    lines = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Compare):
            sides = [node.left, *node.comparators]
            words = {s.value for s in sides if isinstance(s, ast.Constant) and isinstance(s.value, str)}
            named = " ".join(ast.unparse(s) for s in sides if not isinstance(s, ast.Constant))
            if words & TARGET_WORDS and not any(w in named for w in NOT_A_TARGET):
                lines.append(node.lineno)
        elif isinstance(node, ast.Attribute) and node.attr == "is_cuda":
            lines.append(node.lineno)
        elif isinstance(node, ast.Call) and ast.unparse(node.func).startswith("torch.cuda."):
            lines.append(node.lineno)
    return lines


def _modules_with_device_tests() -> dict[str, list[int]]:
    found = {}
    for name, path in _modules().items():
        if _within(name, ("kernelevolve.platforms",)):
            continue
        lines = _device_tests(ast.parse(path.read_text()))
        if lines:
            found[name] = lines
    return found


def test_device_type_tests_live_behind_the_platform_seam():
    found = _modules_with_device_tests()
    assert len(found) <= MOST_MODULES_WITH_DEVICE_TESTS, found


def test_the_device_test_finder_finds_each_kind():
    tree = ast.parse(
        'if device.type == "cuda": pass\n'
        "if t.is_cuda: pass\n"
        "torch.cuda.synchronize(d)\n"
        'if target != "cpu": pass\n'
        'if kind == "cuda": pass\n'  # a kernel language: not a device test
        'if "cuda" in platform.languages: pass\n'
        "platform.synchronize(d)\n"
    )
    assert _device_tests(tree) == [1, 2, 3, 4]
