"""Problem files: static validation in the parent, execution and shape cases in the worker."""

from __future__ import annotations

import pytest
import torch

from kernelevolve.problem.inputs import DISTRIBUTIONS, build_inputs, build_model, call_get_inputs, problem_dtype
from kernelevolve.problem.problem import (
    ProblemError,
    bind_case,
    case_defaults,
    exec_problem,
    load_problem,
    problem_flops,
    shape_cases,
    tolerance,
)
from tests.conftest import FIXTURES


def test_kernelbench_file_without_extensions_loads():
    problem = load_problem(FIXTURES / "kb_relu.py")
    module = exec_problem(problem.path)
    assert shape_cases(module) == [{}]
    assert problem_dtype(module) == torch.float32
    assert tolerance(module, "float32") == (1e-4, 1e-4)
    assert tolerance(module, "float16") == (1e-2, 1e-2)
    assert len(problem.hash) == 16


def test_hash_ignores_comments_and_formatting(tmp_path):
    a = (FIXTURES / "kb_relu.py").read_text()
    b = tmp_path / "b.py"
    b.write_text("# a comment\n" + a.replace("batch_size = 16", "batch_size  =  16"))
    assert load_problem(FIXTURES / "kb_relu.py").hash == load_problem(b).hash


@pytest.mark.parametrize(
    "name,message",
    [
        ("missing.py", "no such problem file"),
        ("bad_syntax.py", "bad_syntax.py:2: syntax error"),
        ("bad_missing.py", "does not define get_inputs"),
    ],
)
def test_malformed_problem_names_file_and_fault(name, message):
    with pytest.raises(ProblemError, match=message):
        load_problem(FIXTURES / name)


def test_shape_cases_rebind_constants_and_restore():
    module = exec_problem(FIXTURES / "scale_shift.py")
    cases = shape_cases(module)
    defaults = case_defaults(module, cases)
    shapes = []
    for case in cases:
        bind_case(module, case, defaults)
        (x,) = build_inputs(module, 1, "given", torch.float32, torch.device("cpu"))
        shapes.append(tuple(x.shape))
    assert shapes == [(64, 256), (33, 1000)]
    bind_case(module, {}, defaults)
    assert module.COLS == 256
    assert tolerance(module, "float32") == (1e-5, 1e-5)


def test_shape_case_naming_unknown_constant_is_a_problem_error(tmp_path):
    p = tmp_path / "p.py"
    p.write_text((FIXTURES / "scale_shift.py").read_text().replace('{"ROWS": 33', '{"ROWZ": 33'))
    with pytest.raises(ProblemError, match="ROWZ"):
        shape_cases(exec_problem(p))


def test_inputs_depend_on_seed_and_distribution():
    module = exec_problem(FIXTURES / "kb_relu.py")
    cpu = torch.device("cpu")
    a = build_inputs(module, 1, "given", torch.float32, cpu)[0]
    b = build_inputs(module, 1, "given", torch.float32, cpu)[0]
    c = build_inputs(module, 2, "given", torch.float32, cpu)[0]
    assert torch.equal(a, b) and not torch.equal(a, c)
    draws = {d: build_inputs(module, 1, d, torch.float32, cpu)[0] for d in DISTRIBUTIONS}
    assert float(draws["uniform_signed"].abs().max()) <= 1.0
    assert float(draws["large"].abs().max()) > 50
    assert float(draws["heavy_tailed"].abs().max()) > float(draws["normal"].abs().max())
    half = build_inputs(module, 1, "normal", torch.float16, cpu)[0]
    assert half.dtype == torch.float16


def test_get_inputs_raising_is_a_problem_error():
    module = exec_problem(FIXTURES / "bad_get_inputs.py")
    with pytest.raises(ProblemError, match="get_inputs\\(\\) raised ValueError"):
        build_inputs(module, 0, "given", torch.float32, torch.device("cpu"))


def test_parameters_matched_by_seed_and_state_dict():
    module = exec_problem(FIXTURES / "scale_shift.py")
    cpu = torch.device("cpu")
    ref = build_model(module.Model, [256], 7, torch.float32, cpu)

    class Other(torch.nn.Module):  # different construction order: seeding alone would not match
        def __init__(self, cols):
            super().__init__()
            self.bias = torch.nn.Parameter(torch.randn(3))
            self.weight = torch.nn.Parameter(torch.randn(cols))

    new = build_model(Other, [256], 7, torch.float32, cpu, reference=ref)
    assert torch.equal(new.weight, ref.weight)
    assert not ref.training and not new.training


def test_sorted_inputs_stay_sorted_and_distributions_can_be_restricted(tmp_path):
    p = tmp_path / "bucketize.py"
    p.write_text(
        "import torch\nclass Model(torch.nn.Module):\n    def forward(self, x, b):\n"
        "        return torch.bucketize(x, b)\n"
        "def get_inputs():\n    return [torch.randn(100), torch.sort(torch.randn(8)).values]\n"
        "def get_init_inputs():\n    return []\n"
    )
    module = exec_problem(p)
    for dist in DISTRIBUTIONS:
        x, borders = build_inputs(module, 3, dist, torch.float32, torch.device("cpu"))
        assert bool((borders[1:] >= borders[:-1]).all()), dist
    from kernelevolve.problem.inputs import allowed_distributions

    assert allowed_distributions(module) == DISTRIBUTIONS
    module.INPUT_DISTRIBUTIONS = ["given"]
    assert allowed_distributions(module) == ("given",)
    module.INPUT_DISTRIBUTIONS = ["gaussian"]
    with pytest.raises(ProblemError, match="INPUT_DISTRIBUTIONS"):
        allowed_distributions(module)


def test_flops_are_read_per_case(tmp_path):
    module = exec_problem(FIXTURES / "scale_shift.py")
    assert problem_flops(module) is None
    module.FLOPS = lambda: 2 * module.ROWS * module.COLS
    bind_case(module, {"ROWS": 33, "COLS": 1000}, case_defaults(module, shape_cases(module)))
    assert problem_flops(module) == 66000.0
    module.FLOPS = "many"
    with pytest.raises(ProblemError, match="FLOPS"):
        problem_flops(module)


def test_get_inputs_makes_its_tensors_on_the_target_device_or_falls_back_to_the_host(monkeypatch):
    """On a GPU, get_inputs' factory calls allocate there (here the meta device stands in for it, with the cuda
    target's record); code that needs real values on the host (a Python int from a tensor) runs on the host as
    written."""
    import types

    from kernelevolve.platforms import for_device, get_platform
    from kernelevolve.problem import inputs

    monkeypatch.setattr(inputs, "for_device", lambda d: get_platform("cuda") if d.type == "meta" else for_device(d))

    plain = types.ModuleType("plain")
    plain.get_inputs = lambda: [torch.randn(4, 3), torch.arange(5)]
    x, idx = call_get_inputs(plain, 7, torch.device("meta"))
    assert x.device.type == "meta" and idx.device.type == "meta"

    host_only = types.ModuleType("host_only")
    host_only.get_inputs = lambda: [torch.randn(int(torch.randint(2, 5, (1,)).item()), 3)]
    (y,) = call_get_inputs(host_only, 7, torch.device("meta"))
    (z,) = call_get_inputs(host_only, 7, torch.device("cpu"))
    assert y.device.type == "cpu" and torch.equal(y, z)  # the same seed, the same draw as on the host

    broken = types.ModuleType("broken")
    broken.__file__ = "broken.py"
    broken.get_inputs = lambda: 1 / 0
    with pytest.raises(ProblemError, match="get_inputs"):
        call_get_inputs(broken, 7, torch.device("meta"))


def test_the_agents_parses_hold_the_ast_lock(monkeypatch):
    """CPython 3.11 corrupts its AST depth counter when two threads convert at once (python/cpython#106905), and
    the search runs operators in threads (a CI run failed so): every parse on the agent's side holds AST_LOCK."""
    import ast

    from kernelevolve.operators import edits, tune
    from kernelevolve.problem import problem

    held = []
    real = ast.parse
    monkeypatch.setattr(ast, "parse", lambda *a, **k: held.append(problem.AST_LOCK.locked()) or real(*a, **k))
    source = (FIXTURES / "candidates" / "transpose_cpp.py").read_text()
    load_problem(FIXTURES / "transpose.py")
    problem.source_hash(source)
    tune.find_tunables(source)
    edits.apply_response(f"```python\n{source}```", source)
    assert held and all(held), held
