"""kernelevolve.swap(model, DIR): a fused region's C++ kernel swapped into a small model's graph where it won (the
model's shapes), the original nodes everywhere else, the original parameter names, a kernel that fails at swap-in
falling back, torch.compile around the custom op, and directories that cannot be swapped in (docs/model.md,
"Swap-in")."""

from __future__ import annotations

import shutil
from types import SimpleNamespace

import pytest
import torch

import kernelevolve
from kernelevolve.model.region_file import INPUTS, REGIONS, STATE_DICT, read, render
from kernelevolve.model.swap import SwapError, swap
from tests.model_entries import Tiny, tiny
from tests.swap_kernels import kernel_calls, kernel_source, region_run, swap_dir


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    return swap_dir(tmp_path_factory.mktemp("swap"))


@pytest.fixture
def model():
    m, (x,) = tiny()
    return m.eval(), x


def _ops(swapped) -> list[str]:
    graph = swapped._kernelevolve_swap.graph
    return [] if graph is None else [str(n.target) for n in graph.module.graph.nodes if "kernelevolve" in str(n.target)]


def test_the_region_s_kernel_runs_where_it_won_and_the_original_nodes_elsewhere(saved, model):
    folder, name = saved
    original, x = model
    swapped = kernelevolve.swap(original, folder)
    (outcome,) = swapped.kernelevolve_report.regions
    assert outcome.name == name and outcome.swapped and outcome.places == 2
    assert "over torch.compile (the faster of eager and torch.compile)" in outcome.reason
    assert len(_ops(swapped)) == 2 and isinstance(swapped, Tiny) and type(original) is Tiny
    before = kernel_calls()
    with torch.no_grad():
        got, expected = swapped(x), original(x)
    assert kernel_calls() == before + 2  # both blocks' LayerNorm + GELU ran in C++
    torch.testing.assert_close(got, expected, rtol=1e-5, atol=1e-5)
    wider = torch.randn(64, 32)  # another shape: the graph is not for it, the model's own forward runs
    with torch.no_grad():
        torch.testing.assert_close(swapped(wider), original(wider))
        swapped.train()
        torch.testing.assert_close(swapped(x), original(x))  # training mode: the original forward too
    assert kernel_calls() == before + 2


def test_the_swapped_model_has_the_original_names_and_loads_their_weights(saved, model):
    folder, _ = saved
    original, x = model
    swapped = swap(original, folder)
    assert list(swapped.state_dict()) == list(original.state_dict())
    other, _ = tiny()
    with torch.no_grad():
        for p in other.parameters():
            p.add_(0.25)
    swapped.load_state_dict(other.state_dict())  # weights loaded later reach the swapped graph
    before = kernel_calls()
    with torch.no_grad():
        torch.testing.assert_close(swapped(x), other.eval()(x), rtol=1e-5, atol=1e-5)
    assert kernel_calls() == before + 2
    again = swap(other, folder, load_weights=True)  # the weights the directory was saved with
    with torch.no_grad():
        torch.testing.assert_close(again(x), original(x), rtol=1e-5, atol=1e-5)


def test_a_fresh_swap_from_the_saved_directory_gives_the_same_and_gradients_are_aten_s(saved, model, tmp_path):
    folder, _ = saved
    original, x = model
    copied = tmp_path / "copy"
    shutil.copytree(folder, copied)  # as another process would find it
    first, second = swap(original, folder), swap(original, copied)
    with torch.no_grad():
        torch.testing.assert_close(first(x), second(x), rtol=0, atol=0)
    loss = second(x).square().sum()
    loss.backward()
    original(x).square().sum().backward()
    for (name, p), q in zip(second.named_parameters(), original.parameters()):
        torch.testing.assert_close(p.grad, q.grad, rtol=1e-4, atol=1e-5, msg=name)


def _with_kernel(saved, tmp_path, source: str):
    """The saved directory, copied, its region's kernel replaced by `source`."""
    folder, name = saved
    copied = tmp_path / "other"
    shutil.copytree(folder, copied)
    path = copied / REGIONS / f"{name}.py"
    entry = read(path)
    entry.kernel = source
    path.write_text(render(entry))
    return copied, name


def test_a_kernel_that_raises_at_swap_in_falls_back_with_the_reason(saved, model, tmp_path):
    folder, name = _with_kernel(saved, tmp_path, kernel_source(fail="raise RuntimeError('no such tile')"))
    original, x = model
    swapped = swap(original, folder)
    (outcome,) = swapped.kernelevolve_report.regions
    assert not outcome.swapped and "its kernel failed at swap-in: RuntimeError: no such tile" in outcome.reason
    assert f"region {name}: original nodes: its kernel failed" in swapped.kernelevolve_report.lines()[0]
    assert _ops(swapped) == []
    with torch.no_grad():
        torch.testing.assert_close(swapped(x), original(x))


def test_a_kernel_with_wrong_outputs_falls_back(saved, model, tmp_path):
    folder, _ = _with_kernel(saved, tmp_path, kernel_source().replace("return y", "return y + 1e-2"))
    original, x = model
    (outcome,) = swap(original, folder).kernelevolve_report.regions
    assert not outcome.swapped and "wrong output 0 at swap-in (largest difference 0.01" in outcome.reason


def test_torch_compile_compiles_around_the_custom_op(saved, model):
    folder, _ = saved
    original, x = model
    swapped = swap(original, folder)
    compiled = torch.compile(swapped, backend="aot_eager", fullgraph=True)
    before = kernel_calls()
    with torch.no_grad():
        torch.testing.assert_close(compiled(x), original(x), rtol=1e-5, atol=1e-5)
    assert kernel_calls() > before  # the op ran its kernel inside the compiled graph


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ("missing", "no such directory"),
        ("no_state", "not a swap directory (no state_dict.pt and example_inputs.pt"),
        ("corrupt_state", "corrupt state_dict.pt or example_inputs.pt"),
        ("foreign_region", "not a KernelEvolve region file"),
        ("corrupt_region", "corrupt region file: no literal KERNEL"),
        ("stray", "not a region file"),
        ("other_model", "was saved from another model than this one (it lacks blocks.0.0.bias"),
    ],
)
def test_a_directory_that_cannot_be_swapped_in_says_what_in_one_line(saved, model, tmp_path, change, message):
    folder, name = saved
    bad = tmp_path / "bad"
    shutil.copytree(folder, bad)
    region = bad / REGIONS / f"{name}.py"
    original, _ = model
    if change == "missing":
        shutil.rmtree(bad)
    elif change == "no_state":
        (bad / STATE_DICT).unlink()
    elif change == "corrupt_state":
        (bad / INPUTS).write_bytes(b"not a pickle")
    elif change == "foreign_region":
        region.write_text("X = 1\n")
    elif change == "corrupt_region":
        region.write_text(region.read_text().replace("KERNEL = ", "KERNEL_SOURCE = "))
    elif change == "stray":
        (bad / REGIONS / "notes.txt").write_text("mine")
    else:
        original = torch.nn.Sequential(original.blocks[0], original.head)
    with pytest.raises(SwapError, match=message.replace("(", r"\(")) as e:
        swap(original, bad)
    assert "\n" not in str(e.value)


def test_the_command_writes_the_regions_that_won_and_says_what_the_swap_in_did(model, tmp_path, monkeypatch):
    """After a search (here its run, recorded): the region that won becomes DIR/regions/<name>.py, a searched
    region without a correct kernel none; the state_dict and inputs are saved, and the trial swap-in is said."""
    from kernelevolve.cli import model_cmd
    from kernelevolve.model.entry import LoadedModel
    from kernelevolve.model.table import Row

    _, run, row = region_run(tmp_path)
    failed = Row("add_relu_32", "pointwise", [], "s", 1, 1.0, 0.1, status="failed")
    original, x = model
    loaded = LoadedModel("tests.model_entries:tiny", "tests.model_entries:tiny", original, (x,), {}, "cpu")
    messages = []
    monkeypatch.setattr(model_cmd.err, "print", lambda *a, **k: messages.append(" ".join(map(str, a))))
    out = tmp_path / "m"
    model_cmd._swap_dir([row, failed], out, SimpleNamespace(runs_dir=tmp_path / "runs", db=None), loaded)
    assert (out / REGIONS / f"{row.name}.py").is_file() and not (out / REGIONS / "add_relu_32.py").exists()
    assert "region add_relu_32: no correct kernel: not swapped in" in messages
    assert f"swap-in: region {row.name}: swapped in at 2 place(s): node 1, 1.60x over torch.compile" in messages[1]
    with torch.no_grad():
        torch.testing.assert_close(swap(original, out)(x), original(x), rtol=1e-5, atol=1e-5)


def test_operator_kernels_serve_the_swapped_forward_alone(tmp_path):
    """DIR/kernels (here relu's C++ kernel, tests/aten_kernels.py) is enabled scoped: the swapped model's
    forward runs it, the original model and any other code in the process keep ATen."""
    from kernelevolve.kernels import calls
    from kernelevolve.kernels.enable import enabled
    from kernelevolve.kernels.entry import Entry, file_name
    from kernelevolve.kernels.entry import render as render_entry
    from kernelevolve.model.region_export import save_model
    from kernelevolve.model.region_file import KERNELS
    from tests.aten_kernels import kernel_source as aten_kernel

    case = {"kernel": "node_1", "arguments": calls.pattern([torch.empty(4, 16)]), "inputs": 1}
    entry = Entry("aten::relu", [], "cpu", [], {}, [case], {"node_1": aten_kernel("relu")})
    (tmp_path / KERNELS).mkdir()
    (tmp_path / KERNELS / file_name("aten::relu")).write_text(render_entry(entry))  # as the export writes it
    torch.manual_seed(0)
    original, x = torch.nn.Sequential(torch.nn.Linear(16, 16), torch.nn.ReLU()).eval(), torch.randn(4, 16)
    save_model(tmp_path, original, (x,), {})
    swapped = swap(original, tmp_path)
    assert swapped.kernelevolve_report.operators == ["aten::relu"] and not enabled()
    (plan,) = swapped._kernelevolve_swap.operators.plans
    with torch.no_grad():
        torch.testing.assert_close(swapped(x), original(x))
        torch.relu(x)
    assert plan.cases[0].kernel.calls == 1  # the swapped forward's relu alone
