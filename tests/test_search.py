"""The store, one search end to end on the cpu target through the real harness, and export (the driver and the
session on test doubles: test_driver.py)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from sqlalchemy.exc import IntegrityError

from kernelevolve.problem.problem import load_problem
from kernelevolve.result import EvalResult, Status
from kernelevolve.search.export import input_signatures, matches
from kernelevolve.store.models import Node
from kernelevolve.store.store import NodeRecord, Store, StoreError
from tests.conftest import CANDIDATES, FIXTURES

PROBLEM = FIXTURES / "transpose.py"
SEED = CANDIDATES / "transpose_cpp.py"


def optimize_cmd(runs_dir, *args: str, problem=PROBLEM) -> list[str]:
    return [
        sys.executable,
        "-m",
        "kernelevolve",
        "optimize",
        str(problem),
        "--seed",
        str(SEED),
        "--target",
        "cpu",
        "--runs-dir",
        str(runs_dir),
        "--trials",
        "1",
        "--json",
        *args,
    ]


def optimize(runs_dir, *args: str, problem=PROBLEM) -> subprocess.CompletedProcess:
    return subprocess.run(optimize_cmd(runs_dir, *args, problem=problem), capture_output=True, text=True, timeout=600)


def _result(fitness: float | None, status: Status = Status.OK) -> EvalResult:
    return EvalResult(status=status, correct=status is Status.OK, speedup=fitness, fitness=fitness)


def test_store_commits_nodes_edges_and_dedups(tmp_path, store_url):
    store = Store(tmp_path, store_url)
    run = store.create_run(problem_path="p.py", problem_hash="ph", platform="cpu", config={}, config_hash="c", budget=5)
    a = store.add_node(run.id, NodeRecord("seed", "x = 1\n", "h1", {"T": 1}, [], _result(1.0)), strategy_state={})
    b = store.add_node(
        run.id,
        NodeRecord("tune", "x = 2\n", "h2", {"T": 2}, [a.id], _result(2.0)),
        strategy_state={"k": 1},
        visit_updates={a.id: (1, 0.5)},
    )
    c = store.add_node(
        run.id,
        NodeRecord("crossover", "x = 3\n", "h3", {}, [b.id, a.id], _result(0.0, Status.INCORRECT)),
        strategy_state={},
    )
    nodes = store.nodes(run.id)
    assert [n.step for n in nodes] == [1, 2, 3]
    assert [e.parent_id for e in nodes[2].parents] == [b.id, a.id]
    assert nodes[0].visits == 1 and nodes[0].value_sum == 0.5
    assert store.get_run(run.id[:12]).strategy_state == "{}"
    assert store.path(nodes[1].kernel_path).read_text() == "x = 2\n"
    assert store.has_source(run.id, "h2") and not store.has_source(run.id, "h9")
    found = store.find_evaluated("ph", "cpu", "h2")
    assert found and found[0].id == b.id and found[1].fitness == 2.0
    assert store.find_evaluated("ph", "cuda", "h2") is None
    assert store.evaluation(c.id).status is Status.INCORRECT
    # The same source twice in one run: not stored (another process stored it first), and refused by the schema.
    twice = NodeRecord("tune", "x = 2\n", "h2", {}, [a.id], _result(1.0))
    assert store.add_node(run.id, twice, strategy_state={}) is None
    for twin in ({"source_hash": "h2", "step": 9}, {"source_hash": "h9", "step": 2}):
        with pytest.raises(IntegrityError), store.session() as s, s.begin():
            s.add(Node(run_id=run.id, operator="tune", params="{}", status="ok", kernel_path="k.py", **twin))
    assert len(store.nodes(run.id)) == 3


def test_store_reports_an_unusable_location(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("")
    with pytest.raises(StoreError, match="cannot create the runs directory"):
        Store(blocker / "runs")


@pytest.fixture(scope="module")
def greedy_run(tmp_path_factory):
    """The search on the fixture's transpose at a quarter of its sizes: each new best is evaluated twice, and the
    timing of the full sizes made this one search most of the file's time."""
    runs = tmp_path_factory.mktemp("greedy")
    problem = runs.parent / "transpose_small.py"
    text = PROBLEM.read_text().replace("N = 2048\n", "N = 1024\n")
    problem.write_text(
        text.replace('SHAPE_CASES = [{"N": 2048}, {"N": 1000}]', 'SHAPE_CASES = [{"N": 1024}, {"N": 500}]')
    )
    assert "1024" in problem.read_text() and "500" in problem.read_text()
    p = optimize(runs, "--strategy", "greedy", "--budget", "4", problem=problem)
    assert p.returncode == 0, p.stderr
    return runs, json.loads(p.stdout), p.stderr, problem


def test_optimize_end_to_end_then_resume_export_runs_and_show(greedy_run, cpu_evaluator, tmp_path):
    """The one search through the real harness, then the commands on its run, in one test: under xdist each test
    may land on either worker, and the search (the fixture) would then run on both."""
    _check_optimize_end_to_end_on_the_cpu(greedy_run)
    _check_rerunning_the_same_command_resumes_and_reports(greedy_run)
    _check_export_dispatches_per_case_and_is_correct(greedy_run, cpu_evaluator, tmp_path)
    _check_runs_and_show_list_the_run(greedy_run)


def _check_optimize_end_to_end_on_the_cpu(greedy_run):
    """The C++ seed built, tuned, stored, summarised as JSON (the driver's rules are tested on doubles in
    test_driver.py)."""
    runs, out, stderr, _ = greedy_run
    assert "no LLM configured: using the tune operator only" in stderr
    assert out["evaluations"] == 4 and out["best_node"] is not None and out["seed_fitness"] > 0
    assert out["stop_reason"] == "budget of 4 nodes reached" and out["best_speedup_compile"] is None  # cpu
    assert set(out) >= {"run", "best_kernel", "best_speedup", "llm_calls", "llm_cost"}
    assert os.path.isfile(out["best_kernel"]) and (runs / out["run"] / "nodes").is_dir()


def _check_rerunning_the_same_command_resumes_and_reports(greedy_run):
    runs, first, _, problem = greedy_run
    p = optimize(runs, "--strategy", "greedy", "--budget", "4", problem=problem)
    assert p.returncode == 0 and json.loads(p.stdout)["run"] == first["run"]
    assert "resumed (4 nodes stored)" in p.stderr
    resumed = subprocess.run(  # the command Ctrl-C prints: the run as it was specified, its budget of 4 kept
        [sys.executable, "-m", "kernelevolve", "optimize", "--resume", first["run"], "--runs-dir", str(runs), "--json"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert resumed.returncode == 0 and json.loads(resumed.stdout)["stop_reason"] == "budget of 4 nodes reached"
    missing = optimize(runs, "--start", str(runs / "nope.py"), problem=problem)
    assert missing.returncode == 2 and "nope.py: no such starting kernel" in missing.stderr


def _check_export_dispatches_per_case_and_is_correct(greedy_run, cpu_evaluator, tmp_path):
    runs, out, _, problem = greedy_run
    exported = tmp_path / "exported.py"
    p = subprocess.run(
        [sys.executable, "-m", "kernelevolve", "export", out["run"], "--runs-dir", str(runs), "--out", str(exported)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert p.returncode == 0, p.stderr
    text = exported.read_text()
    assert "_DISPATCH" in text and "| case | shape | kernel | speedup |" in text
    result = cpu_evaluator.evaluate(load_problem(problem), exported, trials=2)
    assert result.status is Status.OK, result.reason
    assert all(c.correct for c in result.cases) and len(result.cases) == 2


def test_export_routes_each_case_a_kernel_won_to_it_and_the_rest_to_the_reference(tmp_path):
    """Deterministic: a node that won case 0 (2x) and lost case 1 (0.5x) gets case 0's inputs, the reference
    gets case 1's and any other shape."""
    import torch

    from kernelevolve.result import CaseResult
    from kernelevolve.search.export import export

    store = Store(tmp_path)
    run = store.create_run(
        problem_path=str(PROBLEM), problem_hash="ph", platform="cpu", config={}, config_hash="c", budget=2
    )
    won = EvalResult(
        status=Status.OK,
        correct=True,
        cases=[
            CaseResult(shape={"N": 2048}, correct=True, speedup=2.0),
            CaseResult(shape={"N": 1000}, correct=True, speedup=0.5),
        ],
    ).finalize()
    kernel = (
        "import torch.nn as nn\n\n\nclass ModelNew(nn.Module):\n"
        "    def forward(self, x):\n        return x.t().contiguous() + 0\n"
    )
    node = store.add_node(run.id, NodeRecord("seed", kernel, "h1", {}, [], won), strategy_state={})
    exported = tmp_path / "exported.py"
    choices = export(store, run, exported)
    assert [c.node for c in choices] == [node.id, None]
    namespace: dict = {}
    exec(compile(exported.read_text(), str(exported), "exec"), namespace)
    model = namespace["ModelNew"]()
    calls = []
    model.kernelevolve_kernels[str(node.id)].register_forward_hook(lambda *a: calls.append("kernel"))
    model.register_forward_hook(lambda *a: calls.append("model"))
    for n in (2048, 1000, 7):
        x = torch.randn(n, n)
        assert torch.equal(model(x), x.t().contiguous())
    assert calls == ["kernel", "model", "model", "model"]  # the kernel within the first call


def test_exported_triton_kernels_compile_outside_the_interpreter(tmp_path):
    """Triton's compiler reads a @triton.jit function's source (inspect), which code exec'd from a string does not
    have: the H200 bench found every exported Triton kernel failing to construct. The interpreter never reads
    it, so this runs the export in a process without TRITON_INTERPRET."""
    from kernelevolve.result import CaseResult
    from kernelevolve.search.export import export

    store = Store(tmp_path)
    run = store.create_run(
        problem_path=str(PROBLEM), problem_hash="ph", platform="cuda", config={}, config_hash="c", budget=1
    )
    won = EvalResult(
        status=Status.OK, correct=True, cases=[CaseResult(shape={"N": 2048}, correct=True, speedup=2.0)]
    ).finalize()
    kernel = (
        "import torch.nn as nn\nimport triton\nimport triton.language as tl\n\n\n@triton.jit\n"
        "def _copy(x_ptr, y_ptr, BLOCK: tl.constexpr):\n"
        "    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)\n"
        "    tl.store(y_ptr + offs, tl.load(x_ptr + offs))\n\n\n"
        "class ModelNew(nn.Module):\n    def forward(self, x):\n        return x.t().contiguous()\n"
    )
    node = store.add_node(run.id, NodeRecord("seed", kernel, "h1", {}, [], won), strategy_state={})
    exported = tmp_path / "exported.py"
    export(store, run, exported)
    check = (
        "import importlib.util, inspect, sys\n"
        f"spec = importlib.util.spec_from_file_location('exported', {str(exported)!r})\n"
        "m = importlib.util.module_from_spec(spec); spec.loader.exec_module(m)\n"
        f"k = m.ModelNew().kernelevolve_kernels['{node.id}']\n"
        "jit = type(k).forward.__globals__['_copy']\n"
        "assert type(jit).__name__ == 'JITFunction', type(jit)\n"
        "assert 'tl.store' in jit.src and 'def _copy' in inspect.getsource(jit.fn)\n"
        "print('ok')\n"
    )
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    p = subprocess.run([sys.executable, "-c", check], capture_output=True, text=True, timeout=120, env=env)
    assert p.returncode == 0 and "ok" in p.stdout, p.stderr[-3000:]


def test_export_patterns_wildcard_data_dependent_sizes():
    """Jagged inputs change their total length with every draw: that dimension matches anything, the others
    (batch, width) still tell the shape cases apart; sizes that need real data are drawn on the CPU."""
    import torch

    suite = FIXTURES.parents[1] / "suites" / "ranking"
    (case0, p0), (case1, p1), *_ = input_signatures(str(suite / "jagged_sum" / "problem.py"))
    assert p0[0][0] == (None, case0["DIM"]) and p0[1][0] == (case0["BATCH"] + 1,)
    torch.manual_seed(7)
    values = torch.randn(12345, case0["DIM"])
    offsets = torch.zeros(case0["BATCH"] + 1, dtype=torch.int64)
    key = ((tuple(values.shape), str(values.dtype)), (tuple(offsets.shape), str(offsets.dtype)))
    assert matches(p0, key) and not matches(p1, key)
    (_, truncate), *_ = input_signatures(str(suite / "batch_event_truncate" / "problem.py"))  # .item() inside
    assert truncate[0][0] == (8, 512) and truncate[2][0] == (None,)


def _check_runs_and_show_list_the_run(greedy_run):
    runs, out, *_ = greedy_run
    p = subprocess.run(
        [sys.executable, "-m", "kernelevolve", "runs", "--runs-dir", str(runs)],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "COLUMNS": "200"},
    )
    assert out["run"] in p.stdout and "greedy" in p.stdout and "done" in p.stdout
    p = subprocess.run(
        [sys.executable, "-m", "kernelevolve", "show", out["run"], "--runs-dir", str(runs)],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "COLUMNS": "200"},
    )
    assert p.returncode == 0 and "lineage of the best" in p.stdout
    p = subprocess.run(
        [sys.executable, "-m", "kernelevolve", "show", "nope", "--runs-dir", str(runs)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert p.returncode == 2 and "no run 'nope'" in p.stderr


def test_the_export_is_a_drop_in_that_shares_one_set_of_parameters(tmp_path):
    """Issue 46 item 7: the original Model's state_dict loads into the export (strict), under the original names,
    and a weight changed after export reaches the optimized path as it does the reference's."""
    import torch

    from kernelevolve.result import CaseResult
    from kernelevolve.search.export import export
    from tests.conftest import EXAMPLES

    problem = EXAMPLES / "rmsnorm" / "problem.py"
    store = Store(tmp_path)
    run = store.create_run(
        problem_path=str(problem), problem_hash="ph", platform="cpu", config={}, config_hash="c", budget=1
    )
    shapes = ({"ROWS": 4096, "HIDDEN": 4096}, {"ROWS": 1024, "HIDDEN": 3000}, {"ROWS": 1000, "HIDDEN": 1536})
    speedups = (2.0, 0.5, 0.5)  # the kernel serves the first case, the reference the others
    won = EvalResult(
        status=Status.OK,
        correct=True,
        cases=[CaseResult(shape=s, correct=True, speedup=x) for s, x in zip(shapes, speedups)],
    ).finalize()
    kernel = (
        "import torch\nimport torch.nn as nn\n\n\nclass ModelNew(nn.Module):\n"
        "    def __init__(self, hidden, eps=1e-6):\n        super().__init__()\n        self.eps = eps\n"
        "        self.weight = nn.Parameter(torch.randn(hidden))\n\n"
        "    def forward(self, x, residual):\n        z = x + residual\n"
        "        return z * torch.rsqrt(z.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight\n"
    )
    store.add_node(run.id, NodeRecord("seed", kernel, "h1", {}, [], won), strategy_state={})
    exported = tmp_path / "exported.py"
    export(store, run, exported)
    namespace: dict = {}
    exec(compile(exported.read_text(), str(exported), "exec"), namespace)
    original = namespace["ModelNew"].__mro__[1](4096)  # the problem's Model
    model = namespace["ModelNew"](4096)
    assert list(model.state_dict()) == list(original.state_dict()) == ["weight"]
    assert list(model.parameters()) == [model.weight]  # one set of parameters
    optimized = (torch.randn(4096, 4096), torch.randn(4096, 4096))  # case 0: the kernel
    fallback = (torch.randn(8, 4096), torch.randn(8, 4096))  # no case: the reference

    def same_as_original() -> None:
        for inputs in (optimized, fallback):
            torch.testing.assert_close(model(*inputs), original(*inputs))

    model.load_state_dict(original.state_dict(), strict=True)
    same_as_original()
    original.load_state_dict({"weight": torch.randn(4096)})  # weights changed after export
    model.load_state_dict(original.state_dict(), strict=True)
    same_as_original()
    with torch.no_grad():
        model.weight.mul_(-3.0)
        original.weight.mul_(-3.0)
    same_as_original()
    model.double()  # a conversion keeps the kernels on the model's tensors
    assert all(k.weight is model.weight for k in model.kernelevolve_kernels.values())
