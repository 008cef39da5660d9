"""Export a run's result as one standalone candidate module with shape-aware dispatch.

Each shape case goes to the fastest correct kernel measured on it; a case where no kernel beat the
baseline, and any shape outside the cases, runs the PyTorch reference (the paper's deployment rule).
"""

from __future__ import annotations

import errno
import inspect
import json
import sys
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kernelevolve.result import EvalResult
from kernelevolve.store.models import Run
from kernelevolve.store.store import Store

SIGNATURES_LINE = "KERNELEVOLVE-SIGNATURES "  # begins the line the worker below writes its answer on
SIGNATURES_TIMEOUT_S = 300.0
ERROR_LINE = "KERNELEVOLVE-EXPORT-ERROR "  # begins the line such a worker writes an ExportError's message on


class ExportError(Exception):
    """The module cannot be written where asked (a folder, a path that cannot be written), or a chosen kernel's file
    is missing from the runs directory: the CLI exits 2 with the message."""


@dataclass
class CaseChoice:
    shape: dict[str, Any]
    signature: tuple
    node: int | None
    speedup: float | None


def input_signatures(problem_path: str) -> list[tuple[dict[str, Any], tuple]]:
    """Per shape case: its constants and the dispatch pattern of its inputs. Two draws with different seeds are
    compared, and a dimension that differs between them (a jagged tensor's total length) becomes None, a
    wildcard. Drawn on the meta device where get_inputs allows it, else on the CPU (data-dependent sizes)."""
    from kernelevolve.problem.inputs import problem_dtype
    from kernelevolve.problem.problem import each_shape_case, exec_problem

    module = exec_problem(problem_path)
    dtype = problem_dtype(module)
    out = []
    for case in each_shape_case(module):
        try:
            draws = [signature(draw(module, seed, "meta"), dtype) for seed in (1, 2)]
        except Exception:  # noqa: BLE001 - e.g. .item() on a meta tensor: sizes that depend on the data
            draws = [signature(draw(module, seed, "cpu"), dtype) for seed in (1, 2)]
        out.append((case, merge_signatures(*draws)))
    return out


def input_signatures_in_worker(problem_path: str, timeout_s: float = SIGNATURES_TIMEOUT_S) -> list[tuple[dict, tuple]]:
    """`input_signatures`, computed in a sandboxed process of its own (`python -m kernelevolve.search.export
    PROBLEM`), as evaluations import the problem: its code never runs in the CLI's process. ProblemError with what
    it said where the problem fails there."""
    found = answer_of_worker("kernelevolve.search.export", problem_path, timeout_s)
    return [(case, _as_signature(sig)) for case, sig in found]


def answer_of_worker(module: str, problem_path: str, timeout_s: float = SIGNATURES_TIMEOUT_S) -> Any:
    """The JSON answer `python -m MODULE PROBLEM` writes on its SIGNATURES_LINE, run in a sandboxed process of its
    own with the environment candidates get (the problem's code runs there, not here). ProblemError with what it
    said where it fails; a line `ERROR_LINE message` from it is that message alone (an ExportError there)."""
    from kernelevolve.eval.launch import sandbox, spawn
    from kernelevolve.problem.problem import ProblemError

    done = spawn.run([sys.executable, "-m", module, str(problem_path)], timeout_s=timeout_s, env=sandbox.child_env({}))
    if done is None:
        raise ProblemError(f"{problem_path}: drawing its inputs ran past {timeout_s:g} s")
    errors = [line for line in done.stdout.splitlines() if line.startswith(ERROR_LINE)]
    if errors:
        raise ExportError(errors[-1][len(ERROR_LINE) :])
    answers = [line for line in done.stdout.splitlines() if line.startswith(SIGNATURES_LINE)]
    if done.returncode != 0 or not answers:
        said = (done.stderr.strip() or done.stdout.strip())[-3000:]
        raise ProblemError(f"{problem_path}: drawing its inputs failed (exit status {done.returncode}):\n{said}")
    return json.loads(answers[-1][len(SIGNATURES_LINE) :])


def _as_signature(entries: list[Any]) -> tuple:
    """A signature back from JSON: each tensor's (shape, dtype) a tuple again (lists there)."""
    return tuple((tuple(e[0]), e[1]) if isinstance(e, list) else e for e in entries)


def draw(module: Any, seed: int, device: str) -> list[Any]:
    """The problem's inputs for the case bound in `module`, drawn with `seed` on `device`."""
    import random

    import torch

    random.seed(seed)
    torch.manual_seed(seed)
    with torch.device(device):
        return list(module.get_inputs())


def merge_signatures(a: tuple, b: tuple) -> tuple:
    """One pattern from two draws' signatures: what differs becomes None (matches anything)."""
    if len(a) != len(b):
        return a
    out: list[Any] = []
    for x, y in zip(a, b):
        if isinstance(x, tuple) and isinstance(y, tuple) and len(x[0]) == len(y[0]) and x[1] == y[1]:
            out.append((tuple(p if p == q else None for p, q in zip(x[0], y[0])), x[1]))
        else:
            out.append(x if x == y else None)
    return tuple(out)


def matches(pattern: tuple, key: tuple) -> bool:
    """Whether a call's key fits a case's pattern (the same logic is written into the exported module)."""
    if len(pattern) != len(key):
        return False
    for p, k in zip(pattern, key):
        if p is None:
            continue
        if isinstance(p, tuple) and isinstance(k, tuple):
            if p[1] != k[1] or len(p[0]) != len(k[0]) or any(a is not None and a != b for a, b in zip(p[0], k[0])):
                return False
        elif p != k:
            return False
    return True


def signature(inputs: list[Any], dtype: Any = None) -> tuple:
    """The dispatch key of a call: shape and dtype of each tensor (floating ones as the harness casts them)."""
    import torch

    key = []
    for x in inputs:
        if isinstance(x, torch.Tensor):
            d = dtype if dtype is not None and x.is_floating_point() else x.dtype
            key.append((tuple(x.shape), str(d)))
        else:
            key.append(repr(x))
    return tuple(key)


def winners(evaluated: Iterable[tuple[int, EvalResult]], cases: int) -> list[tuple[float, int] | None]:
    """Per shape case, the fastest correct kernel measured on it that beats the baseline, as (speedup, node id), in
    node order (ties go to the earliest); None where none does and the reference serves the case. Pure: the
    export dispatches by it and the report shows it, without the problem's inputs."""
    best: list[tuple[float, int] | None] = [None] * cases
    for node_id, result in evaluated:
        if not result.correct:
            continue
        for i, case in enumerate(result.cases):
            if i < len(best) and case.speedup and case.speedup > 1.0 and (best[i] is None or case.speedup > best[i][0]):
                best[i] = (case.speedup, node_id)
    return best


def choose(store: Store, run: Run) -> list[CaseChoice]:
    sigs = input_signatures_in_worker(run.problem_path)
    evaluations = store.evaluations(run.id, correct_only=True)
    best = winners(sorted(evaluations.items()), len(sigs))
    return [CaseChoice(shape, sig, b[1] if b else None, b[0] if b else None) for (shape, sig), b in zip(sigs, best)]


TEMPLATE = '''"""KernelEvolve export of run {run} for {problem}.

Shape-aware dispatch: each shape case below runs the fastest correct kernel measured on it; cases where no
kernel beat the baseline, and every other shape, run the PyTorch reference.

A drop-in for the problem's Model: ModelNew is a Model (its parameters under the same names, so Model's
state_dict loads into it), and each kernel uses those same parameter tensors, so weights set or loaded later
reach every path.

{table}
"""

import linecache
import types

import torch
import torch.nn as nn

_REFERENCE = {reference!r}

_KERNELS = {{
{kernels}}}

# (pattern, node) per shape case a kernel won, in case order; None in a pattern matches any size or value.
_DISPATCH = [
{dispatch}]


def _module(name, source):
    # Triton's compiler reads a kernel's source through inspect, which finds it in linecache under this name.
    filename = f"<kernelevolve export: {{name}}>"
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    module = types.ModuleType(name)
    module.__file__ = filename
    exec(compile(source, filename, "exec"), module.__dict__)
    return module


def _share(model, kernel):
    # The kernel's parameters and buffers that the model has under the same name and shape become the model's own.
    for kind, ours in (("_parameters", dict(model.named_parameters())), ("_buffers", dict(model.named_buffers()))):
        theirs = kernel.named_parameters() if kind == "_parameters" else kernel.named_buffers()
        for name, tensor in list(theirs):
            own = ours.get(name)
            if own is not None and own.shape == tensor.shape and own.dtype == tensor.dtype:
                owner, _, leaf = name.rpartition(".")
                getattr(kernel.get_submodule(owner), kind)[leaf] = own


class ModelNew(_module("kernelevolve_reference", _REFERENCE).Model):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.kernelevolve_kernels = {{}}  # a plain dict: the kernels' tensors are the model's, not in its state_dict
        for node, source in _KERNELS.items():
            kernel = _module(f"kernelevolve_node_{{node}}", source).ModelNew(*args, **kwargs)
            _share(self, kernel)
            self.kernelevolve_kernels[str(node)] = kernel

    def _apply(self, fn, *args, **kwargs):
        # .to(), .cuda(), .half(): the kernels' own tensors too; buffers are replaced by a conversion, so shared again.
        super()._apply(fn, *args, **kwargs)
        for kernel in getattr(self, "kernelevolve_kernels", {{}}).values():  # none yet while Model.__init__ runs
            kernel._apply(fn, *args, **kwargs)
            _share(self, kernel)
        return self

    def train(self, mode=True):
        super().train(mode)
        for kernel in getattr(self, "kernelevolve_kernels", {{}}).values():
            kernel.train(mode)
        return self

    def forward(self, *inputs):
        key = tuple((tuple(x.shape), str(x.dtype)) if isinstance(x, torch.Tensor) else repr(x) for x in inputs)
        node = next((n for pattern, n in _DISPATCH if _matches(pattern, key)), None)
        if node is None:
            return super().forward(*inputs)
        return self.kernelevolve_kernels[str(node)](*inputs)


{matches}'''


def export(store: Store, run: Run, out: Path) -> list[CaseChoice]:
    """Write the module to `out`, creating its folder if missing. ExportError: `out` is a folder (found before the
    kernels are chosen), or cannot be written."""
    out = Path(out)
    if out.is_dir():
        suggestion = out / f"{Path(run.problem_path).stem}_export.py"
        raise ExportError(f"--out {out} is a folder: give the file to write, e.g. --out {suggestion}")
    choices = choose(store, run)
    nodes = sorted({c.node for c in choices if c.node is not None})
    sources = {}
    for n in nodes:
        row = next(r for r in store.nodes(run.id) if r.id == n)
        try:
            sources[n] = store.read(row.kernel_path)
        except OSError as e:
            raise ExportError(
                f"cannot read node {row.step}'s kernel {store.path(row.kernel_path)}: {e.strerror}"
            ) from None
    rows = ["| case | shape | kernel | speedup |", "| --- | --- | --- | --- |"]
    for i, c in enumerate(choices):
        shape = " ".join(f"{k}={v}" for k, v in c.shape.items()) or "-"
        kernel = f"node {c.node}" if c.node is not None else "reference"
        rows.append(f"| {i} | {shape} | {kernel} | {f'{c.speedup:.2f}x' if c.speedup else '-'} |")
    dispatch = "".join(f"    ({c.signature!r}, {c.node}),\n" for c in choices if c.node is not None)
    kernels = "".join(f"    {n}: {sources[n]!r},\n" for n in nodes)
    text = TEMPLATE.format(
        run=run.id,
        problem=Path(run.problem_path).name,
        table="\n".join(rows),
        reference=Path(run.problem_path).read_text(),
        kernels=kernels,
        dispatch=dispatch,
        matches=inspect.getsource(matches).replace("def matches(", "def _matches(", 1),
    )
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise ExportError(f"cannot create the folder {out.parent} for --out: {_write_reason(e)}") from None
    try:
        out.write_text(text)
    except OSError as e:
        raise ExportError(f"cannot write --out {out}: {_write_reason(e)}") from None
    return choices


def _write_reason(e: OSError) -> str:
    if e.errno in (errno.ENOSPC, errno.EDQUOT):
        return "the disk is full (no space left on device); free some space or write elsewhere"
    if e.errno in (errno.EACCES, errno.EPERM):
        return "permission denied; choose an --out path you can write"
    if e.errno == errno.EROFS:
        return "the file system is read-only; choose an --out path you can write"
    if e.errno == errno.EISDIR:
        return "it is a folder; give the file to write"
    return f"{(e.strerror or str(e)).lower()}; choose another --out path"


def main() -> None:
    """The worker of `input_signatures_in_worker`: the answer on one line, after whatever the problem printed."""
    if len(sys.argv) != 2:
        sys.exit("usage: python -m kernelevolve.search.export PROBLEM")
    found = input_signatures(sys.argv[1])
    print(SIGNATURES_LINE + json.dumps(found, default=repr), flush=True)


if __name__ == "__main__":
    main()
