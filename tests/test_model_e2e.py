"""The end-to-end proof (kernelevolve/model/e2e.py, `kernelevolve model ENTRY --out DIR --prove`): a small model of
Linear, ReLU, LayerNorm and GELU layers with a kernel directory holding a kernel for aten::relu (a PyTorch-op kernel,
exported from a recorded run as tests/test_enable.py does), its outputs and gradients checked by the measured rule,
its forward timed eager and swapped, the Amdahl table's prediction beside the measured gain, JSON and HTML written;
a wrong kernel and a bad directory (docs/model.md, "The end-to-end proof")."""

from __future__ import annotations

import json
import math
import shutil

import pytest
import torch
import torch.nn as nn
from typer.testing import CliRunner

import kernelevolve
from kernelevolve.cli import app
from kernelevolve.kernels import write
from kernelevolve.kernels.entry import read, render
from kernelevolve.model import e2e, e2e_timing
from kernelevolve.model.entry import load
from kernelevolve.model.region_export import save_model
from kernelevolve.model.swap import swap
from kernelevolve.model.table import amdahl
from kernelevolve.store.store import Store
from tests.aten_kernels import PROBLEMS, record_run

ENTRY = "tests.test_model_e2e:small"
RELU = "import torch\nimport torch.nn as nn\n\n\nclass ModelNew(nn.Module):\n"
RELU += "    def forward(self, x):\n        return {}\n"
RIGHT = RELU.format("torch.clamp(x, min=0)")
WRONG = RELU.format("x.abs()")  # not relu: an affine error would vanish in the LayerNorm after it


class Small(nn.Module):
    """Linear -> ReLU -> LayerNorm -> GELU -> Linear; the ReLU at f32[4x16], the shape the relu kernel is proven on."""

    def __init__(self) -> None:
        super().__init__()
        self.proj = nn.Linear(16, 16)
        self.norm = nn.LayerNorm(16)
        self.head = nn.Linear(16, 8)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(nn.functional.gelu(self.norm(torch.relu(self.proj(x)))))


def small() -> tuple[nn.Module, tuple[torch.Tensor]]:
    torch.manual_seed(0)
    return Small(), (torch.randn(4, 16),)


ROWS = [  # as `kernelevolve model --search` writes them: relu won and is in DIR/kernels, addmm won but is not
    {"name": "relu-1", "kind": "operator", "ops": ["aten::relu.default"], "share": 0.2, "time_ms": 0.2,
     "measured": 2.0, "status": "ok", "calls": 1, "signature": "f32[4x16]"},
    {"name": "addmm-1", "kind": "operator", "ops": ["aten::addmm.default"], "share": 0.5, "time_ms": 0.5,
     "measured": 1.5, "status": "ok", "calls": 2, "signature": "f32[16], f32[4x16], f32[16x16]"},
    {"name": "gelu-1", "kind": "operator", "ops": ["aten::gelu.default"], "share": 0.1, "time_ms": 0.1,
     "measured": 0.8, "status": "ok", "calls": 1, "signature": "f32[4x16]"},
]  # fmt: skip


@pytest.fixture(scope="module")
def right(tmp_path_factory):
    """DIR as `kernelevolve model --search` leaves it: model.json, kernels/ (the relu kernel, exported once), the
    model's state_dict and example inputs."""
    tmp = tmp_path_factory.mktemp("right")
    store, folder = Store(tmp / "runs"), tmp / "m"
    with pytest.MonkeyPatch.context() as patch:  # the fixture problem read in this process, not a worker's (seconds)
        patch.setattr(write, "answer_of_worker", lambda module, path: json.loads(json.dumps(write.problem_facts(path))))
        write.export_kernel_dir(store, record_run(store, PROBLEMS / "relu.py", RIGHT, [2.0]), folder / "kernels")
    manifest = {"entry": ENTRY, "target": "cpu", "forward": {"operators_ms": 1.0, "eager_ms": 1.0}, "rows": ROWS}
    (folder / "model.json").write_text(json.dumps(manifest))
    model, args = small()
    save_model(folder, model, args, {})
    return folder


def _copy(right, tmp_path, kernel: str | None = None):
    """A copy of DIR, its relu kernel's source replaced where given (the file rendered again, as exported)."""
    folder = shutil.copytree(right, tmp_path / "m")
    if kernel is not None:
        path = folder / "kernels" / "aten__relu.py"
        entry = read(path)
        entry.kernels = {name: kernel for name in entry.kernels}
        path.write_text(render(entry))
    return folder


def _options(**kw):
    return e2e.ProofOptions(variants=["eager", "swapped"], batches=2, runs=3, **kw)


def test_the_swapped_model_keeps_the_original_s_names_and_runs_its_kernels_only_inside(right):
    loaded = load(ENTRY, "cpu")
    swapped = swap(loaded.model, right)
    assert list(swapped.state_dict()) == list(loaded.model.state_dict())
    assert swapped.kernelevolve_report.operators == ["aten::relu"]
    calls = []
    (plan,) = swapped._kernelevolve_swap.operators.plans  # count the relu kernel's calls through its dispatch
    for case in plan.cases:
        kernel = case.kernel
        case.kernel = lambda *a, k=kernel: calls.append(1) or k(*a)
    swapped(*loaded.args)
    loaded.model(*loaded.args)
    assert calls == [1]  # the swapped forward's relu; the original, outside it, on ATen alone


def test_the_proof_checks_times_and_predicts(right):
    loaded = load(ENTRY, "cpu")
    said = []
    data = e2e.prove(loaded, right, _options(train=True), said.append)
    assert data["ok"] and any("aten::relu" in line for line in data["swap"])
    outputs, gradients = data["checks"]
    assert [leaf["name"] for leaf in outputs["leaves"]] == ["output"] and outputs["batches"] == 2
    assert outputs["rule"].startswith("measured") and outputs["leaves"][0]["worst_ratio"] <= 1.0
    assert [leaf["name"] for leaf in gradients["leaves"]] == [n for n, _ in loaded.model.named_parameters()]
    assert all(leaf["ok"] for leaf in gradients["leaves"])
    assert [(v["name"], v["graphs"], v["status"]) for v in data["variants"]] == [
        ("eager", False, "ok"),
        ("swapped", False, "ok"),
    ]
    assert not data["graphs"]["on"] and "cpu" in data["graphs"]["why_off"]
    eager, swapped = data["variants"]
    assert eager["p90_ms"] >= eager["median_ms"] > 0 and eager["throughput"] == pytest.approx(
        4 / (eager["median_ms"] / 1e3)
    )
    table = data["amdahl"]
    assert [(r["name"], r["in_model"]) for r in table["rows"]] == [("relu-1", True), ("addmm-1", False)]
    assert table["rows"][0]["predicted"] == pytest.approx(amdahl(0.2, 2.0))
    assert table["predicted"] == pytest.approx(1 / (1 - 0.2 * (1 - 1 / 2.0)))  # relu alone: addmm is not in the model
    measured = eager["median_ms"] / swapped["median_ms"]
    assert table["measured_vs_eager"] == pytest.approx(measured) and table["best_baseline"] == "eager"
    assert table["error"] == pytest.approx(abs(table["predicted"] - measured) / measured)
    assert any("timing swapped" in line for line in said)


def test_the_command_writes_json_and_html_and_prints_the_table(right):
    result = CliRunner().invoke(app, ["prove", ENTRY, "--target", "cpu", "--out", str(right),
                                      "--variants", "eager,swapped", "--batches", "1"])  # fmt: skip
    assert result.exit_code == 0, result.output
    data = json.loads((right / "e2e.json").read_text())
    assert data["ok"] and {"checks", "variants", "amdahl", "graphs", "notes"} <= set(data)
    html = (right / "e2e.html").read_text()
    assert "report-data" in html and "relu-1" in html
    assert "predicted" in result.output and "swapped" in result.output


def test_a_wrong_kernel_is_reported_by_output_and_the_command_fails(right, tmp_path):
    folder = _copy(right, tmp_path, WRONG)
    result = CliRunner().invoke(app, ["prove", ENTRY, "--target", "cpu", "--out", str(folder),
                                      "--variants", "eager", "--batches", "2"])  # fmt: skip
    assert result.exit_code == 1, result.output
    data = json.loads((folder / "e2e.json").read_text())
    leaf = data["checks"][0]["leaves"][0]
    assert not data["ok"] and leaf["name"] == "output" and leaf["failed"] == 2
    assert "beyond the error budget" in leaf["reason"] and leaf["worst_ratio"] > 16
    assert "outputs: output: batch 0:" in result.output


def test_a_variant_that_fails_is_reported_not_raised(right, monkeypatch):
    loaded = load(ENTRY, "cpu")
    forward = e2e_timing.Forward(loaded.model, loaded.model, loaded.args, loaded.kwargs, torch.device("cpu"))

    def compiled(*a, **k):  # what torch.compile returns for a model it cannot compile: it fails on the first call
        raise RuntimeError("backend refused\nmore lines")

    monkeypatch.setattr(torch, "compile", lambda module, mode: compiled)
    monkeypatch.setattr(torch.compiler, "reset", lambda: None)
    timed = e2e_timing.time_variant(forward, "compile", False, runs=2)
    assert (timed.status, timed.error, timed.median_ms) == ("failed", "RuntimeError: backend refused", None)


@pytest.mark.parametrize(
    ("prepare", "message"),
    [
        (lambda folder: (folder / "model.json").unlink(), "holds no model.json"),
        (lambda folder: (folder / "model.json").write_text("{"), "cannot read"),
        (lambda folder: [p.unlink() for p in (folder / "kernels").iterdir()], "no kernel files"),
    ],
)
def test_a_bad_directory_is_one_line(right, tmp_path, prepare, message):
    folder = _copy(right, tmp_path)
    prepare(folder)
    result = CliRunner().invoke(app, ["prove", ENTRY, "--target", "cpu", "--out", str(folder)])
    assert result.exit_code == 2 and message in result.output
    assert len(result.output.strip().splitlines()) == 1


def test_bad_variants_and_an_entry_that_fails_are_one_line(right):
    result = CliRunner().invoke(app, ["prove", ENTRY, "--target", "cpu", "--out", str(right),
                                      "--variants", "eager,fast"])  # fmt: skip
    assert result.exit_code == 2 and "unknown fast" in result.output
    result = CliRunner().invoke(app, ["prove", "tests.model_entries:no_model", "--out", str(right)])
    assert result.exit_code == 2 and len(result.output.strip().splitlines()) == 1
    result = CliRunner().invoke(app, ["prove", ENTRY, "--out", str(right), "--loss", "tests.test_model_e2e:small"])
    assert result.exit_code == 2 and "give --train with it" in result.output
    result = CliRunner().invoke(app, ["prove", ENTRY, "--out", str(right), "--train", "--loss", "tests.nowhere:f"])
    assert result.exit_code == 2 and "cannot import tests.nowhere" in result.output


def test_kernels_left_registered_for_every_model_stop_the_proof(right):
    """The original must run on ATen alone: a directory enabled globally (by the entry, or a swap that registers
    for good) would make the baseline the swapped model."""
    with kernelevolve.enable(right / "kernels"), pytest.raises(e2e.ProofError, match="before the swap"):
        e2e.prove(load(ENTRY, "cpu"), right, _options(), lambda line: None)


def test_the_json_has_no_infinities():
    assert e2e.finite({"a": [math.inf, 1.0], "b": math.nan}) == {"a": [None, 1.0], "b": None}


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
def test_on_cuda_each_variant_is_timed_with_cuda_graphs_off_and_on(right):
    data = e2e.prove(load(ENTRY, "cuda"), right, _options(), lambda line: None)
    assert data["ok"] and data["graphs"] == {"on": True, "why_off": ""}
    assert [(v["name"], v["graphs"], v["status"]) for v in data["variants"]] == [
        ("eager", False, "ok"),
        ("eager", True, "ok"),
        ("swapped", False, "ok"),
        ("swapped", True, "ok"),
    ]
