"""`kernelevolve model`: the profile and the Amdahl table of a tiny model, extraction into loadable problems, a
search through bench's runner with the tune operator, fused regions from a stand-in finder, and bad input."""

from __future__ import annotations

import json
import math
import sqlite3
from dataclasses import dataclass, field
from pathlib import Path

import pytest
import torch
from typer.testing import CliRunner

from kernelevolve.cli import app
from kernelevolve.cli.model_cmd import _per_search
from kernelevolve.model.entry import load, resolve_entry
from kernelevolve.model.extract import write_problems
from kernelevolve.model.profile import merge_values, profile_model, shapes_only
from kernelevolve.model.table import Row, amdahl, operator_rows, predicted, ranked
from kernelevolve.problem.problem import check_cases, exec_problem, load_problem, shape_cases
from kernelevolve.store.store import Store
from tests.doubles import RuleEvaluator, kernel

TINY = "tests.model_entries:tiny"


@pytest.fixture(scope="module")
def tiny():
    loaded = load(TINY, "cpu")
    return loaded, profile_model(loaded)


def _row(rows: list[Row], op: str, shape: str) -> Row:
    return next(r for r in rows if r.ops == [op] and shape in r.signature)


def test_the_profile_groups_calls_by_operator_and_signature(tiny):
    _, profile = tiny
    by = {(g.operator, g.signature): g for g in profile.groups}
    assert profile.attribution == "per call" and profile.eager_ms > 0
    gelu = [g for g in by.values() if g.operator == "aten::gelu.default"]
    assert len(gelu) == 1 and gelu[0].calls == 2  # two layers, one signature: one row
    addmm = sorted(g.call["args"][2]["t"] for g in by.values() if g.operator == "aten::addmm.default")
    assert addmm == [[32, 8], [32, 32]]  # the head's and the blocks' weights: two signatures
    assert [g.calls for g in by.values() if g.operator == "aten::native_layer_norm.default"] == [2]
    assert all(g.time_ms > 0 for g in profile.groups)
    assert profile.operators_ms == pytest.approx(sum(g.time_ms for g in profile.groups))
    # the two GELU calls saw different values: the problem's range is the widest, not either one's
    low, high = gelu[0].call["args"][0]["range"]
    assert low < 0 < high


def test_rows_of_one_table_selected_in_turn_are_one_signature():
    first = {"args": [{"t": [4, 8], "dtype": "int64", "offset": 0, "range": [0, 9]}], "kwargs": {}}
    second = {"args": [{"t": [4, 8], "dtype": "int64", "offset": 32, "range": [3, 12]}], "kwargs": {}}
    assert shapes_only(first) == shapes_only(second) == {"args": [{"t": [4, 8], "dtype": "int64"}], "kwargs": {}}
    merged = merge_values(first, second)
    assert merged["args"][0] == {"t": [4, 8], "dtype": "int64", "offset": 0, "range": [0, 12]}


def test_the_amdahl_table_ranks_by_share_and_predicts_from_measured_speedups(tiny):
    _, profile = tiny
    rows = ranked(operator_rows(profile))
    assert [r.time_ms for r in rows] == sorted((r.time_ms for r in rows), reverse=True)
    assert sum(r.share for r in rows) == pytest.approx(1.0)
    assert {r.reason for r in rows if not r.extractable} == {"view"}  # aten::t
    assert amdahl(0.5, math.inf) == pytest.approx(2.0) and amdahl(0.5, 2.0) == pytest.approx(4 / 3)
    a, b = Row("a", "operator", ["x"], "", 1, 1.0, 0.5), Row("b", "operator", ["y"], "", 1, 1.0, 0.25)
    a.measured, b.measured = 2.0, 0.5  # b lost: ATen keeps its time
    assert predicted([a, b]) == pytest.approx(1 / (1 - 0.25))
    region = Row("r", "pointwise", ["x", "z"], "", 1, 1.0, 0.6)
    region.measured = 3.0  # a winning region covers operator x: a's saving is not counted twice
    assert predicted([a, b, region]) == pytest.approx(1 / (1 - 0.4))


def test_extracted_problems_load_and_their_reference_is_the_models_operator(tiny, tmp_path):
    loaded, profile = tiny
    rows = operator_rows(profile)
    gelu, linear = _row(rows, "aten::gelu.default", "f32[16x32]"), _row(rows, "aten::addmm.default", "32x8")
    digests, lines = write_problems([gelu, linear], tmp_path, TINY, opinfo=False)
    assert set(digests) == {gelu.name, linear.name} and not any("not extracted" in line for line in lines)
    for row in (gelu, linear):
        module = exec_problem(load_problem(row.problem).path)
        assert module.ATEN_OPERATOR == row.ops[0] and len(shape_cases(module)) == 1 and check_cases(module) == []
        assert "yours to edit" in Path(row.problem).read_text()
    torch.manual_seed(0)
    module = exec_problem(Path(linear.problem))
    bias, x, weight_t, kwargs = module.get_inputs()
    assert list(x.shape) == [16, 32] and weight_t.stride() == (1, 32)  # the traced layout: a transposed weight
    head = loaded.model.head
    with torch.no_grad():
        head.weight.copy_(weight_t.t())
        head.bias.copy_(bias)
        torch.testing.assert_close(module.Model()(bias, x, weight_t, kwargs), head(x))
    x = exec_problem(Path(gelu.problem)).get_inputs()[0]
    torch.testing.assert_close(exec_problem(Path(gelu.problem)).Model()(x, {}), torch.nn.GELU()(x))


def test_opinfo_samples_become_check_cases(tiny, tmp_path):
    pytest.importorskip("expecttest")
    _, profile = tiny
    gelu = _row(operator_rows(profile), "aten::gelu.default", "f32[16x32]")
    _, lines = write_problems([gelu], tmp_path, TINY, opinfo=True)
    assert "OpInfo samples for 1 of 1 operators" in lines[0]
    assert check_cases(exec_problem(Path(gelu.problem)))


@pytest.fixture(autouse=True)
def quick_profile(monkeypatch):
    """One profiled forward and two timed ones: the same code, less time."""
    monkeypatch.setattr("kernelevolve.model.profile.PROFILE_RUNS", 1)
    monkeypatch.setattr("kernelevolve.model.profile.WALL_RUNS", 2)


def model(tmp_path: Path, *args: str):
    return CliRunner().invoke(app, ["model", *args, "--target", "cpu", "--out", str(tmp_path / "m"), "--no-opinfo"])


def test_the_command_lists_extracts_and_never_overwrites_an_edited_problem(tmp_path):
    listed = model(tmp_path, TINY, "--list", "--json")
    assert listed.exit_code == 0, listed.output
    table = json.loads(listed.stdout)
    assert table["entry"] == TINY and table["rows"][0]["ideal_speedup"] > 1 and not (tmp_path / "m").exists()
    made = model(tmp_path, TINY, "--top", "2", "--assume-speedup", "2")
    assert made.exit_code == 0, made.output
    assert "at 2x" in made.stdout and "if free" in made.stdout
    manifest = json.loads((tmp_path / "m" / "model.json").read_text())
    problems = [r for r in manifest["rows"] if r["problem"]]
    assert problems == [r for r in manifest["rows"] if r["extractable"]][:2]  # the two most valuable
    first, second = (Path(r["problem"]) for r in problems)
    first.write_text(first.read_text() + "\n# edited\n")
    again = model(tmp_path, TINY, "--pick", ",".join(r["name"] for r in problems))
    assert again.exit_code == 0, again.output
    assert f"{first}: kept as it is (edited since written)" in again.output
    assert f"{second}: kept as it is (as written)" in again.output
    assert first.read_text().endswith("# edited\n")


@dataclass
class Region:
    name: str
    kind: str
    signature: str
    ops: list[str] = field(default_factory=list)
    count: int = 1
    time_ms: float = 0.0
    source: str = ""


def test_regions_join_the_table_as_one_row_per_signature(tmp_path, monkeypatch):
    source = (Path(__file__).parent / "fixtures" / "kb_relu.py").read_text()
    from kernelevolve.model import regions as finder

    monkeypatch.setattr(
        finder,
        "find_regions",
        lambda model, args, kwargs, target: [
            Region("ln_gelu", "normalisation", "ln+gelu 16x32", ["aten::native_layer_norm.default"], 1, 1e6, source),
            Region("ln_gelu_2", "normalisation", "ln+gelu 16x32", ["aten::native_layer_norm.default"], 1, 1e6, source),
        ],
    )
    monkeypatch.setattr(finder, "last_skipped", lambda: [])
    made = model(tmp_path, TINY, "--top", "1", "--json")
    assert made.exit_code == 0, made.output
    table = json.loads((tmp_path / "m" / "model.json").read_text())
    top = table["rows"][0]  # two occurrences of a second each: more than the whole forward's operators
    assert top["name"] == "ln_gelu" and top["calls"] == 2 and top["share"] > 1
    assert (tmp_path / "m" / "ln_gelu" / "problem.py").read_text() == source
    broken = Region("broken", "pointwise", "other", ["aten::gelu.default"], 1, 1e6, "x = (")
    monkeypatch.setattr(finder, "last_skipped", lambda: [("mixed", "mixed floating dtypes")])  # the finder's own
    monkeypatch.setattr(finder, "find_regions", lambda *a: [broken])  # fails to extract: said, the rest go on
    made = model(tmp_path, TINY, "--top", "2")
    assert made.exit_code == 0 and "broken: not extracted:" in made.output and "syntax error" in made.output
    assert "1 skipped: mixed (mixed floating dtypes)" in made.output
    assert not (tmp_path / "m" / "broken").exists() and len(list((tmp_path / "m").glob("*/problem.py"))) == 2
    monkeypatch.setattr(finder, "find_regions", lambda *a: 1 / 0)
    failed = model(tmp_path, TINY, "--list")
    assert (
        failed.exit_code == 0 and "fused regions skipped: the region finder failed (ZeroDivisionError" in failed.output
    )


class OnePool:
    """bench's pool, one lane: the rule evaluator (tests/doubles.py), scoring a kernel by its TILE constant."""

    size = 1

    def lanes(self):
        return [RuleEvaluator()]

    def close(self):
        pass


def test_search_runs_the_picked_problems_with_the_tune_operator_and_predicts_end_to_end(tmp_path, monkeypatch):
    made = model(tmp_path, TINY, "--top", "1")
    assert made.exit_code == 0, made.output
    (name,) = [r["name"] for r in json.loads((tmp_path / "m" / "model.json").read_text())["rows"] if r["problem"]]
    (tmp_path / "m" / name / "seed.py").write_text(kernel(4))  # the user's starting kernel, with a tunable
    monkeypatch.setattr("kernelevolve.cli.bench_cmd.make_pool", lambda *a, **k: OnePool())
    args = ["--pick", name, "--search", "--budget", "3", "--runs-dir", str(tmp_path / "runs"), "--no-compile-baseline"]
    searched = model(tmp_path, TINY, *args)
    assert searched.exit_code == 0, searched.output
    (row,) = [r for r in json.loads((tmp_path / "m" / "model.json").read_text())["rows"] if r["status"]]
    assert row["name"] == name and row["status"] == "ok" and row["measured"] > 0
    with sqlite3.connect(tmp_path / "runs" / "kernelevolve.db") as con:
        ops = [o for (o,) in con.execute("select operator from nodes order by step")]
    assert ops == ["seed", "tune", "tune"]  # the user's seed, then the tune operator: no model asked
    table = json.loads((tmp_path / "m" / "model.json").read_text())
    won = row["measured"] if row["measured"] > 1 else 1.0
    assert table["predicted_speedup"] == pytest.approx(amdahl(row["share"], won))
    assert "predicted end to end from the measured speedups" in searched.stdout
    assert (tmp_path / "m" / "search" / "results.json").is_file()
    # the rule's export is slower than eager on every case: no kernel won, so no kernel directory for enable()
    assert "no operator's kernel beat the baseline on any case" in searched.output
    assert not (tmp_path / "m" / "kernels").exists()


def test_the_operators_that_won_become_a_kernel_directory_for_enable(tmp_path, monkeypatch):
    """After a search, each operator row with a correct result is exported as its operator's file
    (kernels/write.py, winners only); regions and failed rows are not."""
    from types import SimpleNamespace

    from kernelevolve.cli import model_cmd
    from kernelevolve.kernels import write
    from kernelevolve.model.table import Row

    store = Store(tmp_path / "runs")
    run = store.create_run(problem_path="p.py", problem_hash="h", platform="cpu", config={}, config_hash="c", budget=1)
    exported = []

    def export(store_, run_, folder):
        exported.append(run_.id)
        return folder / "aten.gelu.default.py", object()

    monkeypatch.setattr(write, "export_kernel_dir", export)
    rows = [
        Row("gelu", "operator", ["aten::gelu.default"], "", 1, 1.0, 0.5),
        Row("ln", "normalization", [], "", 1, 1.0, 0.5),
        Row("failed", "operator", ["aten::mm.default"], "", 1, 1.0, 0.1),
    ]
    results = {
        "gelu": SimpleNamespace(correct=True, run=run.id),
        "ln": SimpleNamespace(correct=True, run=run.id),
        "failed": SimpleNamespace(correct=False, run=run.id),
    }
    where = SimpleNamespace(runs_dir=tmp_path / "runs", db=None)
    messages = []
    monkeypatch.setattr(model_cmd.err, "print", lambda *a, **k: messages.append(" ".join(map(str, a))))
    model_cmd._kernel_dir(rows, results, where, tmp_path / "kernels")
    assert exported == [run.id]  # the operator row alone
    assert f"kernel directory: {tmp_path / 'kernels'} (1 operators)" in messages[0] and "enable(" in messages[0]


@pytest.mark.parametrize(
    ("entry", "says"),
    [
        ("tests.no_such_module:tiny", "cannot import tests.no_such_module"),
        ("tests.model_entries:nothing", "has no function nothing"),
        ("tests.model_entries:no_model", "must return (model, example_inputs)"),
        ("tests.model_entries:fails", "the model failed while profiled: RuntimeError: shapes do not match"),
        ("recipe:no_such_recipe", "recipe:no_such_recipe: no such recipe"),
        ("no-colon", "expected MODULE:FUNCTION"),
    ],
)
def test_bad_entries_end_in_one_line(tmp_path, entry, says):
    result = model(tmp_path, entry)
    assert result.exit_code == 2 and says in result.output and "Traceback" not in result.output


def test_a_pick_that_is_no_candidate_says_why(tiny, tmp_path):
    result = model(tmp_path, TINY, "--pick", "nope")
    assert result.exit_code == 2 and "--pick: no candidate named nope; the most valuable are" in result.output
    view = next(r.name for r in operator_rows(tiny[1]) if r.ops == ["aten::t.default"])
    result = model(tmp_path, TINY, "--pick", view)
    assert result.exit_code == 2 and f"--pick: {view} cannot be a problem: view" in result.output
    assert "--list" in model(tmp_path, TINY, "--list", "--search").output


def test_a_model_torch_compile_cannot_take_is_said_and_the_table_goes_on(tiny, monkeypatch):
    def refuse(model):
        raise RuntimeError("backend refused\nmore lines")

    monkeypatch.setattr(torch, "compile", refuse)
    profile = profile_model(tiny[0], compiled=True)
    assert profile.compiled_ms is None and profile.groups
    # (a busy host may add its own note beside it)
    assert "torch.compile failed on the model (RuntimeError: backend refused)" in profile.notes


@pytest.mark.gpu
def test_the_profile_reads_device_time_on_cuda():
    if not torch.cuda.is_available():
        pytest.skip("no CUDA device")
    profile = profile_model(load(TINY, "cuda"))
    assert profile.attribution == "per call" and profile.target == "cuda"
    assert all(g.time_ms > 0 for g in profile.groups if g.operator != "aten::t.default")


def test_recipes_resolve_and_a_missing_gpu_is_one_line(tmp_path):
    assert resolve_entry("recipe:dlrm") == "kernelevolve.aten.recipes:dlrm"
    assert resolve_entry(TINY) == TINY
    if not torch.cuda.is_available():
        result = CliRunner().invoke(app, ["model", TINY, "--target", "cuda", "--out", str(tmp_path / "m")])
        assert result.exit_code == 2 and "--target cuda: no GPU is visible to torch here" in result.output


def test_time_is_the_whole_models_split_over_the_waves_of_searches():
    assert _per_search(None, 5, 2) is None
    assert _per_search(600.0, 5, 2) == pytest.approx(200.0)  # three waves: 2, 2 and 1 problems
    assert _per_search(600.0, 4, 4) == pytest.approx(600.0)
