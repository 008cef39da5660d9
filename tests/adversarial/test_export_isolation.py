"""`kernelevolve export` draws the problem's inputs in a sandboxed process of its own, as evaluations do (first
round of issue 45): the problem's code never runs in the CLI's process."""

from __future__ import annotations

import builtins

from kernelevolve.search.export import export
from kernelevolve.store.store import Store
from tests.conftest import FIXTURES

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
