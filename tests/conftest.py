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
