"""`kernelevolve export RUN --kernel-dir DIR`: a run of an ATen operator problem written as that operator's file
of a kernel directory (docs/aten.md "Kernels in a model: enable()").

The problem names its operator (`ATEN_OPERATOR`, and the in-place / out= forms in `ATEN_VARIANTS`); its
`get_inputs()` are the call's positional arguments then one dict of its keyword arguments (the generated suite's
convention), or the operator's leading arguments in schema order; every argument not given keeps its default. Each
shape case goes to the fastest correct kernel measured on it that beat the baseline (search/export.py `winners`,
as the module export does), recorded with the pattern of the call it was proven on and its evaluation.
"""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path
from typing import Any

from kernelevolve.kernels import calls
from kernelevolve.kernels.entry import Entry, file_name, render
from kernelevolve.platforms import PLATFORMS
from kernelevolve.result import CaseResult, EvalResult
from kernelevolve.search.export import ERROR_LINE, SIGNATURES_LINE, ExportError, answer_of_worker, draw, winners
from kernelevolve.store.models import Node, Run
from kernelevolve.store.store import Store


def export_kernel_dir(store: Store, run: Run, folder: Path) -> tuple[Path, Entry | None]:
    """Write the run's operator file into `folder` (replacing an earlier export of that operator). The entry is
    None, and nothing is written, where no kernel beat the baseline on any case: ATen serves the operator."""
    facts = answer_of_worker("kernelevolve.kernels.write", run.problem_path)
    operator = facts["operator"]
    cases = [(shape, pattern, called) for shape, pattern, called in facts["cases"]]
    evaluations = store.evaluations(run.id, correct_only=True)
    best = winners(sorted(evaluations.items()), len(cases))
    nodes = {n.id: n for n in store.nodes(run.id)}
    dispatch, kernels, found = [], {}, {}
    for i, ((shape, pattern, called), won) in enumerate(zip(cases, best)):
        if won is None:
            continue
        node, result = nodes[won[1]], evaluations[won[1]]
        name = f"node_{node.step}"
        kernels.setdefault(name, node_source(store, node))
        dispatch.append(_case(name, node, shape, pattern, called, result.cases[i]))
        found = found or evidence(run, result)
    path = Path(folder) / file_name(operator)
    if not dispatch:
        return path, None
    entry = Entry(operator, facts["variants"], device_of(run), facts["init_inputs"], found, dispatch, kernels)
    write_file(path, render(entry))
    return path, entry


def device_of(run: Run) -> str:
    """The device type a run's kernels run on (rocm's: "cuda", as torch names it)."""
    return PLATFORMS[run.platform].device_type if run.platform in PLATFORMS else run.platform


def write_file(path: Path, text: str) -> None:
    """An exported file written, its folder made; ExportError where it cannot be."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    except OSError as e:
        raise ExportError(f"cannot write {path}: {e.strerror}") from None


def problem_facts(problem_path: str) -> dict[str, Any]:
    """What the export needs of an ATen operator problem, its code run in this process (the worker below): the
    operator and its variants, get_init_inputs(), and per shape case its constants, call pattern and calling
    convention; the problem's Model checked to be the operator. ExportError where it is not such a problem."""
    from kernelevolve.problem.problem import exec_problem

    module = exec_problem(problem_path)
    operator = getattr(module, "ATEN_OPERATOR", None)
    if not isinstance(operator, str):
        raise ExportError(
            f"{problem_path} names no ATEN_OPERATOR: --kernel-dir exports ATen operator problems (suites/aten); "
            "use --out for a module"
        )
    try:
        op = calls.overload(operator)
        cases = case_patterns(module, op)
    except calls.CallError as e:
        raise ExportError(f"{problem_path}: {e}") from None
    _check_is_operator(module, op, min(cases, key=lambda c: _numel(c[1]))[0])
    variants = list(getattr(module, "ATEN_VARIANTS", []))
    return {"operator": operator, "variants": variants, "init_inputs": _init_inputs(module), "cases": cases}


def main() -> None:
    """The worker of `export_kernel_dir` (search/export.py `answer_of_worker`): the answer on one line, after
    whatever the problem printed; an ExportError's message on its own line."""
    if len(sys.argv) != 2:
        sys.exit("usage: python -m kernelevolve.kernels.write PROBLEM")
    try:
        facts = problem_facts(sys.argv[1])
    except ExportError as e:
        print(ERROR_LINE + str(e).replace("\n", " "), flush=True)
        sys.exit(3)
    print(SIGNATURES_LINE + json.dumps(facts), flush=True)


def split_call(inputs: list[Any]) -> tuple[list[Any], dict[str, Any] | None]:
    """A problem's inputs as the call's (positional, keyword) arguments. Inputs ending in a dict are the generated
    suite's convention (`kernelevolve/aten/spec.py` build_call; ATen's tensor operators take no dict argument);
    otherwise the keywords are None: the inputs are the operator's leading arguments."""
    if inputs and isinstance(inputs[-1], dict):
        return list(inputs[:-1]), dict(inputs[-1])
    return list(inputs), None


def convention(args: list[Any], kwargs: dict[str, Any] | None) -> dict[str, Any]:
    """How the harness called the kernel, as DISPATCH records it: `inputs` positional values, then (where the
    problem's inputs end in a dict) one dict of the keyword arguments named in `keywords`."""
    return {"inputs": len(args)} if kwargs is None else {"inputs": len(args), "keywords": list(kwargs)}


def case_patterns(module: Any, op: Any) -> list[tuple[dict[str, Any], calls.Pattern, dict[str, Any]]]:
    """Per shape case: its constants, the pattern of the operator call its inputs make (two draws: a size that
    differs between them is a wildcard), and the calling convention of its inputs (`convention`)."""
    from kernelevolve.problem.inputs import problem_dtype
    from kernelevolve.problem.problem import each_shape_case

    dtype = problem_dtype(module)
    out = []
    for spec in each_shape_case(module):
        draws = []
        for seed in (1, 2):
            args, kwargs = split_call([_cast(x, dtype) for x in draw(module, seed, "meta")])
            draws.append(calls.pattern(calls.bind(op._schema, args, kwargs or {})))
        out.append((spec, calls.merge(*draws), convention(args, kwargs)))
    return out


def _numel(pattern: calls.Pattern) -> int:
    return sum(math.prod(s or 1 for s in a["shape"]) for a in pattern if "shape" in a)


def _check_is_operator(module: Any, op: Any, spec: dict[str, Any]) -> None:
    """The problem's Model must be the operator on its inputs (arguments not given at their defaults), or a kernel
    proven on it would serve calls it never computed: checked on the smallest case, drawn on the CPU."""
    import torch

    from kernelevolve.problem.inputs import problem_dtype
    from kernelevolve.problem.problem import bind_case, case_defaults, shape_cases

    defaults = case_defaults(module, shape_cases(module))
    bind_case(module, spec, defaults)
    try:
        inputs = [_cast(x, problem_dtype(module)) for x in draw(module, 1, "cpu")]
        with torch.no_grad():
            expected = module.Model(*module.get_init_inputs())(*inputs)
            args, kwargs = split_call(inputs)
            got = op(*args, **(kwargs or {}))
    finally:
        bind_case(module, {}, defaults)
    if not _same(got, expected):
        raise ExportError(
            f"{module.__file__}: its Model is not {op.name()} on get_inputs() (arguments not given at their defaults), "
            "so its kernels cannot stand in for that operator in a model"
        )


def _same(a: Any, b: Any) -> bool:
    import torch

    if isinstance(a, (tuple, list)) or isinstance(b, (tuple, list)):
        return type(a) is type(b) and len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    if isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor):
        return a.shape == b.shape and a.dtype == b.dtype and torch.allclose(a, b, equal_nan=True)
    return a == b


def _cast(x: Any, dtype: Any) -> Any:
    """An input as the harness hands it to the kernel: floating tensors in the problem's dtype."""
    import torch

    return x.to(dtype) if isinstance(x, torch.Tensor) and x.is_floating_point() else x


def _init_inputs(module: Any) -> list[Any]:
    values = list(module.get_init_inputs())
    if any(not isinstance(v, (bool, int, float, str, type(None))) for v in values):
        raise ExportError(f"{module.__file__}: get_init_inputs() must give plain values (numbers, strings) here")
    return values


def node_source(store: Store, node: Node) -> str:
    try:
        return store.read(node.kernel_path)
    except OSError as e:
        raise ExportError(
            f"cannot read node {node.step}'s kernel {store.path(node.kernel_path)}: {e.strerror}"
        ) from None


def _case(
    name: str, node: Node, shape: dict[str, Any], pattern: calls.Pattern, called: dict[str, Any], c: CaseResult
) -> dict[str, Any]:
    """A DISPATCH entry: the call pattern, and the case's evaluation as the kernel passed it."""
    return {
        "kernel": name,
        "node": node.step,
        "node_id": node.id,
        "shape": shape,
        "arguments": pattern,
        **called,
        **case_evidence(c),
    }


def case_evidence(c: CaseResult) -> dict[str, Any]:
    """A case's evaluation as a kernel file records it: the verdict, the speedups over eager and over the faster
    of eager and torch.compile (eager alone where compile was not timed), and the times."""
    kernel_ms, eager_ms, compile_ms = (c.timing.of(name).median_ms for name in ("candidate", "eager", "compile"))
    best = min(t for t in (eager_ms, compile_ms) if t) if eager_ms else None
    return {
        "verdict": f"correct ({c.accuracy.rule or 'measured'}, error ratio {c.accuracy.error_ratio:.3g})"
        if c.accuracy.error_ratio is not None
        else f"correct ({c.accuracy.rule or 'measured'})",
        "speedup": eager_ms / kernel_ms if eager_ms and kernel_ms else c.speedup,
        "speedup_best": best / kernel_ms if best and kernel_ms else None,
        "t_kernel_ms": kernel_ms,
        "t_eager_ms": eager_ms,
        "t_compile_ms": compile_ms,
    }


def evidence(run: Run, result: EvalResult) -> dict[str, Any]:
    rules = sorted({c.accuracy.rule for c in result.cases if c.accuracy.rule})
    return {
        "run": run.id,
        "problem": run.problem_path,
        "problem_hash": run.problem_hash,
        "target": result.target or run.platform,
        "device": result.device,
        "versions": dict(result.versions),
        "correctness": ", ".join(rules) or "measured",
        "baseline": result.baseline,
    }


if __name__ == "__main__":
    main()
