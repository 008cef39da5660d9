"""The sandbox around candidate code (eval/sandbox.py): no network, nothing it starts outlives its worker, the
parent out of sight, no secrets in its environment, nothing written outside its own folders. Each probe is a
candidate that prints what it could do (its print lands in the worker's log, which the result keeps); where this
machine cannot make namespaces the probes are skipped and the result's `sandbox` says why."""

from __future__ import annotations

import os
import socket
import time
from pathlib import Path

import pytest

from kernelevolve.eval import sandbox
from kernelevolve.eval.evaluator import Evaluator
from kernelevolve.problem.problem import load_problem
from kernelevolve.result import Status
from tests.conftest import FIXTURES

RELU = FIXTURES / "kb_relu.py"
PROBE = """
import json, os, socket, sys, time
import torch
import torch.nn as nn

REPORT = {report!r}  # in the cache folder, which stays writable: the daemon's proof of life would land there
found = {{"ppid": os.getppid(), "secret": os.environ.get("KERNELEVOLVE_TEST_API_KEY"),
          "kept": os.environ.get("KERNELEVOLVE_TEST_PLAIN")}}
try:
    socket.create_connection(("127.0.0.1", {port}), timeout=2).close()
    found["network"] = "connected"
except OSError as e:
    found["network"] = type(e).__name__
if os.fork() == 0:  # a daemon of its own session, meant to outlive the worker
    os.setsid()
    if os.fork() == 0:
        time.sleep(4)
        with open(REPORT + ".daemon", "w") as f:
            f.write("still alive")
    os._exit(0)
print("PROBE " + json.dumps(found), flush=True)


class ModelNew(nn.Module):
    def forward(self, x):
        return torch.relu(x)
"""


@pytest.fixture
def listening():
    server = socket.create_server(("127.0.0.1", 0))
    yield server.getsockname()[1]
    server.close()


def test_every_result_says_what_confines_candidates(cpu_evaluator):
    result = cpu_evaluator.evaluate(load_problem(RELU), FIXTURES / "candidates" / "relu_ok.py", trials=1)
    assert result.sandbox == sandbox.describe() and result.sandbox


@pytest.mark.skipif(not sandbox.prefix(), reason=f"no sandbox on this machine: {sandbox.describe()}")
def test_a_candidate_has_no_network_no_parent_no_secrets_and_nothing_outlives_it(tmp_path, monkeypatch, listening):
    import json

    monkeypatch.setenv("KERNELEVOLVE_TEST_API_KEY", "sk-must-not-leak")
    monkeypatch.setenv("KERNELEVOLVE_TEST_PLAIN", "kept")
    monkeypatch.setenv("KERNELEVOLVE_CACHE", str(tmp_path / "cache"))
    report = tmp_path / "cache" / "report.json"
    candidate = tmp_path / "probe.py"
    candidate.write_text(PROBE.format(report=str(report), port=listening))
    with Evaluator("cpu", timeout_s=120) as ev:  # started after the variables were set
        result = ev.evaluate(load_problem(RELU), candidate, trials=1, timed=False)
    assert result.status is Status.OK, (result.reason, result.log_tail[-2000:])
    found = json.loads(result.log_tail.split("PROBE ", 1)[1].splitlines()[0])
    assert found["network"] != "connected"  # a server listening on this machine's loopback is out of reach
    assert found["ppid"] == 0  # the worker's parent is outside its PID namespace: not even its pid is known
    assert found["secret"] is None and found["kept"] == "kept"
    time.sleep(5)
    assert (tmp_path / "cache").is_dir() and not Path(str(report) + ".daemon").exists()  # killed with the worker


WRITER = """
import json, os, tempfile
import torch
import torch.nn as nn

found = {{}}
for name, path in {targets!r}.items():
    try:
        with open(path, "a") as f:
            f.write("forged")
        found[name] = "written"
    except OSError as e:
        found[name] = e.strerror
own = os.path.join(tempfile.gettempdir(), "scratch")
with open(own, "w") as f:
    f.write("mine")
found["tmpdir"] = tempfile.gettempdir()
print("PROBE " + json.dumps(found), flush=True)


class ModelNew(nn.Module):
    def forward(self, x):
        return torch.relu(x)
"""


@pytest.mark.skipif(not sandbox.confines_files(), reason=f"no file-system confinement here: {sandbox.describe()}")
def test_a_candidate_writes_nothing_outside_its_own_folders(tmp_path):
    """The store, its own run folder and the problem file are read-only to it (a forged fitness, a deleted row, a
    slower reference); its TMPDIR is its own and is gone after the evaluation."""
    import json
    import shutil

    problem = tmp_path / "problem.py"
    shutil.copy(RELU, problem)
    store = tmp_path / "runs" / "kernelevolve.db"
    node = tmp_path / "runs" / "run-1" / "nodes" / "00001"
    node.mkdir(parents=True)
    store.write_text("the store")
    candidate = node / "kernel.py"
    targets = {"store": str(store), "problem": str(problem), "own_file": str(candidate), "new": str(node / "x.py")}
    candidate.write_text(WRITER.format(targets=targets))
    with Evaluator("cpu", timeout_s=120) as ev:
        result = ev.evaluate(load_problem(problem), candidate, trials=1, timed=False)
    assert result.status is Status.OK, (result.reason, result.log_tail[-2000:])
    found = json.loads(result.log_tail.split("PROBE ", 1)[1].splitlines()[0])
    assert {found[k] for k in targets} == {"Read-only file system"}, found
    assert store.read_text() == "the store" and problem.read_text() == RELU.read_text()
    assert not (node / "x.py").exists()
    assert found["tmpdir"] != tempfile_root() and not os.path.exists(found["tmpdir"])
    assert "read-only file system" in result.sandbox


def tempfile_root() -> str:
    import tempfile

    return tempfile.gettempdir()


def test_eval_says_when_nothing_confines_candidates():
    import subprocess
    import sys

    env = {**os.environ, "KERNELEVOLVE_SANDBOX": "off"}
    args = [str(RELU), str(FIXTURES / "candidates" / "relu_ok.py"), "--target", "cpu", "--trials", "1"]
    p = subprocess.run(
        [sys.executable, "-m", "kernelevolve", "eval", *args], env=env, capture_output=True, text=True, timeout=300
    )
    assert p.returncode == 0, p.stderr
    assert "sandbox: none: KERNELEVOLVE_SANDBOX=off" in p.stdout
