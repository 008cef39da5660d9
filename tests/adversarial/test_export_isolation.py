"""`kernelevolve export` draws the problem's inputs in a sandboxed process of its own, as evaluations do (first
round of issue 45): the problem's code never runs in the CLI's process."""

from __future__ import annotations

import builtins

from kernelevolve.search.export import export
from kernelevolve.store.store import Store
from tests.conftest import FIXTURES, ROOT

MARK = "KERNELEVOLVE_PROBLEM_RAN_HERE"


def _run(tmp_path, preamble: str):
    problem = tmp_path / "problem.py"
    problem.write_text(f"import builtins\n{preamble}\n" + (FIXTURES / "kb_relu.py").read_text())
    store = Store(tmp_path / "runs")
    run = store.create_run(
        problem_path=str(problem), problem_hash="ph", platform="cpu", config={}, config_hash="c", budget=1
    )
    return store, run


def test_export_never_runs_the_problem_in_its_own_process(tmp_path):
    store, run = _run(tmp_path, f"builtins.{MARK} = True")
    out = tmp_path / "exported.py"
    choices = export(store, run, out)
    assert not hasattr(builtins, MARK)
    assert [c.node for c in choices] == [None] and "class ModelNew" in out.read_text()


def test_the_kernel_dir_export_never_runs_the_problem_in_its_own_process(tmp_path):
    """--kernel-dir reads the operator, its cases' call patterns and the operator check from a worker too; a run
    with no correct kernel writes nothing (ATen serves the operator)."""
    from kernelevolve.kernels.write import export_kernel_dir

    problem = tmp_path / "problem.py"
    source = (ROOT / "suites" / "aten" / "abs.default" / "problem.py").read_text()
    problem.write_text(f"import builtins\nbuiltins.{MARK} = True\n" + source)
    store = Store(tmp_path / "runs")
    run = store.create_run(
        problem_path=str(problem), problem_hash="ph", platform="cpu", config={}, config_hash="c", budget=1
    )
    path, entry = export_kernel_dir(store, run, tmp_path / "kernels")
    assert not hasattr(builtins, MARK)
    assert entry is None and path.name.startswith("aten__abs") and not path.exists()
