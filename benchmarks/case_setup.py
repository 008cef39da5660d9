"""One kernel file's shape cases, built in this process for a hand measurement (copy_floor.py, case_sweep.py):
the problem's inputs and reference drawn as the harness draws them, and the candidate's model matched to it.
Not an evaluation: no worker, no correctness trials, no checks. The harness's verdicts come from
`kernelevolve eval` and `bench`."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from kernelevolve.problem.candidate import load_candidate  # noqa: E402
from kernelevolve.problem.inputs import build_init_inputs, build_inputs, build_model, problem_dtype  # noqa: E402
from kernelevolve.problem.problem import bind_case, case_defaults, exec_problem, shape_cases  # noqa: E402


@dataclass
class CaseSetup:
    index: int
    shape: dict[str, Any]
    problem: Any  # the problem module, bound to this case
    candidate: Any  # the candidate module: its launch constants can be re-bound between calls
    reference: Any
    model: Any
    inputs: list[Any]


def case_setups(kernel: Path, device: Any, only: int | None = None) -> Iterator[CaseSetup]:
    """Every shape case of the problem beside `kernel` (or case `only`), one at a time."""
    problem = exec_problem(kernel.parent / "problem.py")
    candidate = load_candidate(kernel)
    cases = shape_cases(problem)
    if only is not None and not 0 <= only < len(cases):
        raise SystemExit(f"{kernel.parent / 'problem.py'}: no shape case {only} (it has {len(cases)})")
    defaults = case_defaults(problem, cases)
    dtype = problem_dtype(problem)
    for index, case in enumerate(cases):
        if only is not None and index != only:
            continue
        shape = bind_case(problem, case, defaults)
        init = build_init_inputs(problem)
        reference = build_model(problem.Model, init, 0, dtype, device)
        model = build_model(candidate.ModelNew, init, 0, dtype, device, reference=reference)
        inputs = build_inputs(problem, 1, "given", dtype, device)
        yield CaseSetup(index, shape, problem, candidate, reference, model, inputs)
