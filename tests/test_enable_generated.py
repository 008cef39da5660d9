"""A generated ATen problem (suites/aten: inputs are the call's positional arguments, then one dict of its keyword
arguments) exported as a kernel directory and enabled: the kernel is called as the problem's harness called it,
on the calls it was proven on only, and never recurses (docs/aten.md "Kernels in a model: enable()")."""

from __future__ import annotations

import dataclasses
import shutil
from pathlib import Path

import pytest
import torch
import torch.nn as nn

import kernelevolve
from kernelevolve.kernels.entry import read
from kernelevolve.kernels.write import export_kernel_dir
from kernelevolve.store.store import Store
from tests.aten_kernels import record_run

PROBLEM = Path(__file__).resolve().parents[1] / "suites" / "aten" / "div.Tensor_mode" / "problem.py"

# A PyTorch kernel in the generated convention. It checks its own result against its own operator, which inside
# its impl must reach ATen, not this kernel again.
FLOOR_DIV = """import torch
import torch.nn as nn


class ModelNew(nn.Module):
    seen = []

    def forward(self, *inputs):
        *args, kwargs = inputs
        type(self).seen.append((len(args), dict(kwargs)))
        if kwargs != {"rounding_mode": "floor"}:
            raise ValueError(f"this kernel floors; called with {kwargs}")
        a, b = args
        q = torch.floor_divide(a, b)
        if not torch.equal(q, torch.div(a, b, rounding_mode="floor")):
            raise AssertionError("floor_divide differs from div")
        return q
"""


class Halve(nn.Module):
    """Positions to pair indices, as a model writes it: it knows nothing of the kernels."""

    def forward(self, positions, mode="floor", by=2):
        return torch.div(positions, by, rounding_mode=mode) + 1


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("generated")
    problem = tmp / "div_problem.py"
    shutil.copy(PROBLEM, problem)
    store = Store(tmp / "runs")
    # shape cases: float32 [128] / 2 and [32] / 2 won, int64 [2] / 5 lost to ATen (all with rounding_mode='floor')
    _, entry = export_kernel_dir(store, record_run(store, problem, FLOOR_DIV, [2.0, 1.5, 0.5]), tmp / "kernels")
    return tmp / "kernels", entry


def test_the_entry_records_the_call_as_the_harness_made_it(exported):
    folder, entry = exported
    assert entry is not None and read(folder / "aten__div.Tensor_mode.py") == entry
    assert [(c["shape"], c["inputs"], c["keywords"]) for c in entry.dispatch] == [
        ({"CASE": 0}, 2, ["rounding_mode"]),
        ({"CASE": 1}, 2, ["rounding_mode"]),
    ]
    assert [a.get("shape") or a["value"] for a in entry.dispatch[0]["arguments"]] == [[128], "2", "'floor'"]


def test_a_model_gets_equal_outputs_and_aten_serves_the_calls_never_proven(exported):
    folder, _ = exported
    model = Halve()
    x, short = torch.arange(128.0), torch.arange(32.0) - 7
    others = [
        (x, "trunc", 2),  # another keyword value
        (x, "floor", 3),  # another divisor
        (torch.arange(64.0), "floor", 2),  # another shape
        (torch.tensor([15990, 15990]), "floor", 5),  # the case the kernel lost
        (x[::2], "floor", 2),  # strides it was not proven on
    ]
    expected = [model(x), model(short), *(model(*o) for o in others)]
    with kernelevolve.enable(folder) as handle:
        kernel = handle.plans[0].cases[0].kernel
        kernel.seen.clear()
        got = [model(x), model(short)]
        assert kernel.seen == [(2, {"rounding_mode": "floor"})] * 2
        got += [model(*o) for o in others]
        assert len(kernel.seen) == 2
    for g, e in zip(got, expected):
        torch.testing.assert_close(g, e, rtol=0, atol=0)
    model(x)
    assert len(kernel.seen) == 2  # disabled: ATen again


def test_a_problem_whose_model_hides_a_keyword_is_refused(tmp_path):
    """The export's check runs the operator on the bound call, keywords included: a Model that drops them is not
    the operator on its inputs."""
    from kernelevolve.search.export import ExportError

    problem = tmp_path / "div_problem.py"
    problem.write_text(PROBLEM.read_text().replace("(*args, **kwargs)", "(*args, rounding_mode=None)"))
    store = Store(tmp_path / "runs")
    run = record_run(store, problem, FLOOR_DIV, [2.0, 1.5, 0.5])
    with pytest.raises(ExportError, match=r"its Model is not aten::div.Tensor_mode on get_inputs\(\)"):
        export_kernel_dir(store, run, tmp_path / "kernels")


@pytest.mark.parametrize(
    ("keywords", "message"),
    [("rounding_mode", "keywords not names"), (["mode"], "does not match aten::div.Tensor_mode's arguments")],
)
def test_an_entry_whose_keywords_are_not_the_operator_s_registers_nothing(exported, tmp_path, keywords, message):
    from kernelevolve.kernels.enable import EnableError, enabled
    from kernelevolve.kernels.entry import render

    _, entry = exported
    bad = tmp_path / "kernels"
    bad.mkdir()
    cases = [{**c, "keywords": keywords} for c in entry.dispatch]
    (bad / "aten__div.Tensor_mode.py").write_text(render(dataclasses.replace(entry, dispatch=cases)))
    with pytest.raises(EnableError, match=message):
        kernelevolve.enable(bad)
    assert not enabled()
