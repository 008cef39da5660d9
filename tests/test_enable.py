"""kernelevolve.enable(KERNEL_DIR): C++ kernels exported from runs (tests/aten_kernels.py) serve a small model's
ATen calls where they were proven, ATen serves the rest, nothing recurses, disable restores ATen, and a bad
directory registers nothing (docs/aten.md "Kernels in a model: enable()")."""

from __future__ import annotations

import ast
import shutil

import pytest
import torch
import torch.nn as nn

import kernelevolve
from kernelevolve.kernels import enable as enabling
from kernelevolve.kernels.entry import read, render
from tests.aten_kernels import kernel_dir


class Small(nn.Module):
    """relu, a residual add and a row softmax: three of the directory's operators, in a model that knows nothing
    of them."""

    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(16, 16)

    def forward(self, x):
        h = torch.relu(self.proj(x))
        return torch.softmax(h + x, dim=-1)


@pytest.fixture(scope="module")
def kernels(tmp_path_factory):
    return kernel_dir(tmp_path_factory.mktemp("aten"))


def _calls(handle) -> dict[str, int]:
    return {p.entry.operator: sum(c.kernel.calls for c in p.cases) for p in handle.plans}


def test_a_model_runs_unmodified_on_the_kernels_where_proven_and_on_aten_elsewhere(kernels):
    torch.manual_seed(0)
    model, x = Small(), torch.randn(4, 16)
    expected, wider = model(x), model(torch.randn(64, 16))
    with kernelevolve.enable(kernels) as handle:
        got = model(x)
        assert _calls(handle) == {"aten::_softmax": 1, "aten::add.Tensor": 1, "aten::relu": 1}
        model(torch.randn(64, 16))  # add's larger case lost to ATen, and no other kernel was proven at 64 rows
        torch.relu(x.t().contiguous().t())  # a transposed copy: strides the kernels were not proven on
        torch.relu(x.double())
        torch.relu(x[:, :8])  # a slice: another shape and strides
        assert _calls(handle) == {"aten::_softmax": 1, "aten::add.Tensor": 1, "aten::relu": 1}
    torch.testing.assert_close(got, expected, rtol=1e-6, atol=1e-6)
    assert wider.shape == (64, 16)
    assert kernelevolve.disable is enabling.disable and not enabling.enabled()


def test_autograd_keeps_aten_s_derivatives_around_a_kernel(kernels):
    x = torch.randn(4, 16, requires_grad=True)
    torch.relu(x).sum().backward()
    expected = x.grad.clone()
    x.grad = None
    with kernelevolve.enable(kernels) as handle:
        torch.relu(x).sum().backward()
        assert _calls(handle)["aten::relu"] == 1
    torch.testing.assert_close(x.grad, expected)


def test_in_place_and_out_forms_go_through_the_shim(kernels):
    a, b = torch.randn(4, 16), torch.randn(4, 16)
    out = torch.empty(0)
    with kernelevolve.enable(kernels) as handle:
        y = a.clone()
        y.add_(b)
        torch.add(a, b, out=out)
        r = a.clone()
        torch.relu_(r)
        assert _calls(handle) == {"aten::_softmax": 0, "aten::add.Tensor": 2, "aten::relu": 1}
        torch.add(a, b, alpha=2, out=torch.empty(4, 16))  # alpha=2 was never proven: ATen
        a.clone().add_(2.5)  # a wrapped number where a tensor was proven: ATen
        assert _calls(handle)["aten::add.Tensor"] == 2
    torch.testing.assert_close(y, a + b)
    torch.testing.assert_close(out, a + b)
    torch.testing.assert_close(r, torch.relu(a))


def test_a_kernel_that_calls_its_own_operator_reaches_aten_not_itself(tmp_path):
    """A PyTorch kernel calling torch.relu inside the relu impl: without the guard, endless recursion."""
    source = (
        "import torch\nimport torch.nn as nn\n\nclass ModelNew(nn.Module):\n    calls = 0\n\n"
        "    def forward(self, x):\n        type(self).calls += 1\n        return torch.relu(x) + torch.relu(x) * 0\n"
    )
    folder = kernel_dir(tmp_path, {"relu": source})
    x = torch.randn(4, 16)
    with kernelevolve.enable(folder) as handle:
        torch.testing.assert_close(torch.relu(x), x.clamp(min=0))
        assert _calls(handle)["aten::relu"] == 1
        torch.testing.assert_close(torch.add(x, 1.0), x + 1)  # Python numbers into ATen's fallback


def test_disable_restores_aten_and_a_second_directory_may_not_take_the_same_operators(kernels):
    handle = kernelevolve.enable(kernels)
    try:
        with pytest.raises(enabling.EnableError, match="already enabled"):
            kernelevolve.enable(kernels)
    finally:
        kernelevolve.disable()
    torch.relu(torch.randn(4, 16))
    assert _calls(handle)["aten::relu"] == 0 and not enabling.enabled()
    kernelevolve.enable(kernels).disable()  # free to take again


def _bad(kernels, tmp_path, name, text):
    folder = tmp_path / "bad"
    shutil.copytree(kernels, folder)
    (folder / name).write_text(text)
    return folder


def _edited(folder, **changes) -> str:
    entry = read(folder / "aten__relu.py")
    for k, v in changes.items():
        setattr(entry, k, v)
    return render(entry)


@pytest.mark.parametrize(
    ("name", "text", "message"),
    [
        ("aten__relu.py", "KERNELEVOLVE_KERNEL_FORMAT = 1\nATEN_OPERATOR = (", "not a readable kernel file"),
        ("notes.txt", "mine", "not a kernel file"),
        ("helper.py", "X = 1\n", "not a KernelEvolve kernel file"),
        ("aten__relu.py", "KERNELEVOLVE_KERNEL_FORMAT = 1\nDEVICE = 'cpu'\n", "corrupt kernel file: no literal"),
        ("aten__nonexistent_op.py", "OPERATOR:aten::nonexistent_op", "knows no operator aten::nonexistent_op"),
        ("aten__relu.py", "DEVICE:cuda", "no CUDA device is present"),
        ("aten__relu.py", "KERNEL:raise RuntimeError('no compiler')", "kernel node_1 does not load: RuntimeError"),
        ("aten__softmax.int.py", "OPERATOR:aten::softmax.int", "CompositeImplicitAutograd"),
    ],
)
def test_a_bad_directory_says_what_in_one_line_and_registers_nothing(kernels, tmp_path, name, text, message):
    if text.startswith("OPERATOR:"):
        text = _edited(kernels, operator=text.split(":", 1)[1])
    elif text.startswith("DEVICE:"):
        if torch.cuda.is_available():
            pytest.skip("a CUDA device is present")
        text = _edited(kernels, device="cuda")
    elif text.startswith("KERNEL:"):
        text = _edited(kernels, kernels={"node_1": text.split(":", 1)[1]})
    folder = _bad(kernels, tmp_path, name, text)
    before = torch.library.get_kernel("aten::add.Tensor", "CPU")
    with pytest.raises(enabling.EnableError, match=message) as e:
        kernelevolve.enable(folder)
    assert "\n" not in str(e.value)
    assert not enabling.enabled()
    x = torch.randn(4, 16)
    torch.testing.assert_close(torch.add(x, x), x * 2)
    assert before is not None


def test_the_file_reads_back_as_written_and_its_kernels_as_code(kernels):
    entry = read(kernels / "aten__add.Tensor.py")
    assert [c["shape"] for c in entry.dispatch] == [{"ROWS": 4, "COLS": 16}]  # the lost case is ATen's
    assert entry.evidence["device"] == "cpu (test double)" and entry.evidence["versions"]["torch"]
    source = entry.kernels["node_1"]
    ast.parse(source)
    assert (
        'r"""' in (kernels / "aten__add.Tensor.py").read_text()
        or "r'''" in (kernels / "aten__add.Tensor.py").read_text()
    )


def test_the_export_command_writes_the_operator_file_and_refuses_a_problem_without_an_operator(tmp_path):
    from typer.testing import CliRunner

    from kernelevolve.cli import app
    from kernelevolve.store.store import Store
    from tests.aten_kernels import PROBLEMS, kernel_source, record_run
    from tests.conftest import FIXTURES

    store = Store(tmp_path / "runs")
    run = record_run(store, PROBLEMS / "relu.py", kernel_source("relu"), [2.0])
    args = ["--runs-dir", str(tmp_path / "runs")]
    r = CliRunner().invoke(app, ["export", run.id, "--kernel-dir", str(tmp_path / "k"), *args])
    assert r.exit_code == 0, r.stderr
    assert "node 1 (2.00x over eager)" in r.stderr and (tmp_path / "k" / "aten__relu.py").is_file()
    slower = record_run(store, PROBLEMS / "relu.py", kernel_source("relu"), [0.9])
    r = CliRunner().invoke(app, ["export", slower.id, "--kernel-dir", str(tmp_path / "k2"), *args])
    assert r.exit_code == 0 and "nothing written" in r.stderr and not (tmp_path / "k2").exists()
    plain = record_run(store, FIXTURES / "kb_relu.py", kernel_source("relu"), [2.0])
    r = CliRunner().invoke(app, ["export", plain.id, "--kernel-dir", str(tmp_path / "k"), *args])
    assert r.exit_code == 2 and "names no ATEN_OPERATOR" in r.stderr
    r = CliRunner().invoke(app, ["export", run.id, *args])
    assert r.exit_code == 2 and "give one of --out FILE" in r.stderr
    other = tmp_path / "relu_named_sigmoid.py"
    other.write_text((PROBLEMS / "relu.py").read_text().replace('"aten::relu"', '"aten::sigmoid"'))
    wrong = record_run(store, other, kernel_source("relu"), [2.0])
    r = CliRunner().invoke(app, ["export", wrong.id, "--kernel-dir", str(tmp_path / "k3"), *args])
    assert r.exit_code == 2 and "its Model is not aten::sigmoid on get_inputs()" in r.stderr


TRITON_RELU = """import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _relu(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    x = tl.load(x_ptr + offsets, mask=mask)
    tl.store(y_ptr + offsets, tl.maximum(x, 0.0), mask=mask)


class ModelNew(nn.Module):
    calls = 0

    def forward(self, x):
        type(self).calls += 1
        y = torch.empty_like(x)
        _relu[(triton.cdiv(x.numel(), 1024),)](x, y, x.numel(), BLOCK=1024)
        return y
"""


@pytest.mark.gpu
def test_a_triton_kernel_serves_cuda_calls_and_leaves_the_cpu_to_aten(tmp_path):
    pytest.importorskip("triton")
    from kernelevolve.kernels.write import export_kernel_dir
    from kernelevolve.store.store import Store
    from tests.aten_kernels import PROBLEMS, record_run

    store = Store(tmp_path / "runs")
    run = record_run(store, PROBLEMS / "relu.py", TRITON_RELU, [2.0])
    run.platform = "cuda"  # the export reads the device from the run
    _, entry = export_kernel_dir(store, run, tmp_path / "kernels")
    assert entry is not None and entry.device == "cuda"
    x = torch.randn(4, 16, device="cuda")
    with kernelevolve.enable(tmp_path / "kernels") as handle:
        got = torch.relu(x)
        torch.relu(x.cpu())
        assert _calls(handle)["aten::relu"] == 1
    torch.testing.assert_close(got, torch.relu(x))
