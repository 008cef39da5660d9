"""Shared fixtures: paths, and one evaluator per target reused across tests."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from kernelevolve.eval.evaluator import Evaluator
from kernelevolve.problem.problem import load_problem

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "tests" / "fixtures"
CANDIDATES = FIXTURES / "candidates"
EXAMPLES = ROOT / "examples"

# The fake LLM servers listen on 127.0.0.1: never route them through a proxy a CI machine may set.
os.environ["NO_PROXY"] = os.environ["no_proxy"] = "127.0.0.1,localhost"
# CI runs two test processes on two cores. A C++ kernel with one OpenMP thread per core then shares each core
# with the other process, and its parallel loops wait on descheduled threads: every tiling measured about the same
# (0.3x), so a tune test found nothing to improve. One thread per worker keeps timing comparisons meaningful.
os.environ.setdefault("OMP_NUM_THREADS", "1")


def has_cuda() -> bool:
    try:
        import torch

        return torch.cuda.is_available()
    except ImportError:
        return False


# Modules whose module-scoped fixture is costly (a generated suite, a Ray cluster, a browser, a recorded search, an
# exported model): xdist's `load` distribution deals their tests to both workers, and each worker makes the fixture.
# The scheduler below keeps each of these modules on one worker and deals every other test on its own, as `load` does.
ONE_WORKER_MODULES = frozenset(
    {
        "test_aten_suite.py",
        "test_enable.py",
        "test_enable_generated.py",
        "test_model_regions.py",
        "test_ray_pool.py",
        "test_report.py",
        "test_report_browser.py",
    }
)


@pytest.hookimpl(optionalhook=True)  # a hook of pytest-xdist, absent without it
def pytest_xdist_make_scheduler(config, log):
    """xdist's `loadscope` with a module as the scope only for ONE_WORKER_MODULES, a single test elsewhere (its
    `loadgroup` marks do not take on pytest 9's node ids). Another --dist than the default is left alone."""
    if config.getoption("dist") != "load":
        return None
    from xdist.scheduler import LoadScopeScheduling

    class OneWorkerModules(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            module = nodeid.split("::", 1)[0]
            return module if Path(module).name in ONE_WORKER_MODULES else nodeid

    return OneWorkerModules(config, log)


def pytest_collection_modifyitems(config, items):
    if has_cuda():
        return
    skip = pytest.mark.skip(reason="needs a CUDA GPU")
    for item in items:
        if item.get_closest_marker("gpu") is not None:  # not `keywords`: a checkout in a folder named gpu has it
            item.add_marker(skip)


@pytest.fixture(scope="session")
def cpu_evaluator():
    # A small memory cap keeps the out-of-memory test quick; prestart exercises the spare worker.
    with Evaluator("cpu", timeout_s=120, prestart=True, memory_limit=4 * 2**30) as ev:
        yield ev


@pytest.fixture(scope="session")
def relu_problem():
    return load_problem(FIXTURES / "kb_relu.py")


@pytest.fixture
def sandbox_writable(tmp_path, monkeypatch):
    """A folder that code in the candidate's sandbox can write and the test can read: the file system is read-only
    there but for its private folders (eval/launch/sandbox.py), so this one is left writable by
    KERNELEVOLVE_SANDBOX_WRITABLE
    (also for the test's own child processes)."""
    folder = tmp_path / "from-the-sandbox"
    folder.mkdir()
    monkeypatch.setenv("KERNELEVOLVE_SANDBOX_WRITABLE", str(folder))
    return folder


# ---- PostgreSQL: a server CI starts (.ci/run) and names here; tests that need one skip where none is named ----

PG_VAR = "KERNELEVOLVE_TEST_PG"


@pytest.fixture
def pg_url():
    """A PostgreSQL URL of a fresh schema of its own, dropped afterwards. Skips where KERNELEVOLVE_TEST_PG is unset
    (CI always sets it: .ci/run starts Debian's server)."""
    base = os.environ.get(PG_VAR)
    if not base:
        pytest.skip(f"needs a PostgreSQL server: set {PG_VAR}=postgresql://USER:PASSWORD@HOST/DB (.ci/run does)")
    pytest.importorskip("psycopg", reason="needs psycopg: pip install -e '.[postgres]'")
    from sqlalchemy import create_engine, text

    schema = f"t_{os.getpid()}_{os.urandom(4).hex()}"
    engine = create_engine(base.replace("postgresql://", "postgresql+psycopg://", 1))
    with engine.begin() as c:
        c.execute(text(f"CREATE SCHEMA {schema}"))
    sep = "&" if "?" in base else "?"
    yield f"{base}{sep}options=-csearch_path%3D{schema}"
    with engine.begin() as c:
        c.execute(text(f"DROP SCHEMA {schema} CASCADE"))
    engine.dispose()


@pytest.fixture(params=["sqlite", "postgresql"])
def store_url(request):
    """None (SQLite in the runs directory), then a PostgreSQL schema: a store test run on both."""
    return None if request.param == "sqlite" else request.getfixturevalue("pg_url")
