"""The platform seam (docs/platforms.md): a target is one module and a registration. The "fake accelerator"
(tests/fake_accelerator.py, the host CPU under another name) runs one real `kernelevolve eval` of an example
through the harness; the registry refuses what is not a platform; each built-in target's double answers the
seam's questions as its target does."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from kernelevolve.platforms import PLATFORMS, PLUGINS_ENV, for_device, get_platform, hosted, register
from tests.conftest import EXAMPLES, ROOT

CANDIDATE = """
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, x):
        e = torch.exp(x - x.amax(dim=-1, keepdim=True))
        return e / e.sum(dim=-1, keepdim=True)
"""


def test_a_fake_accelerator_runs_one_real_eval_through_the_harness(tmp_path):
    problem = tmp_path / "problem.py"
    source = (EXAMPLES / "softmax" / "problem.py").read_text()
    problem.write_text(f'{source}\nSHAPE_CASES = [{{"BATCH": 64, "DIM": 1000}}]\n')
    candidate = tmp_path / "candidate.py"
    candidate.write_text(CANDIDATE)
    env = {**os.environ, PLUGINS_ENV: "tests.fake_accelerator", "PYTHONPATH": str(ROOT)}
    args = [sys.executable, "-m", "kernelevolve", "eval", str(problem), str(candidate), "--target", "fakeaccel"]
    done = subprocess.run([*args, "--json", "--trials", "1"], capture_output=True, text=True, env=env, timeout=240)
    assert done.returncode == 0, done.stderr[-2000:]
    result = json.loads(done.stdout)
    assert result["target"] == "fakeaccel"
    assert result["status"] == "ok" and result["correct"], result.get("reason")
    assert result["versions"]["fakeaccel"] == "fake-toolkit 1.0"  # the worker judged with the fake's methods
    assert result["cases"][0]["t_candidate_ms"] > 0  # timed on the host clock, as a host target is


def test_an_unregistered_target_is_named_with_the_choices():
    with pytest.raises(ValueError, match="unknown target 'tpu': choose one of cpu, cuda, rocm"):
        get_platform("tpu")
    with pytest.raises(TypeError, match="takes a Platform"):
        register("tpu")  # type: ignore[arg-type]


def test_each_target_answers_the_seam_as_its_device_does():
    import torch

    cpu, cuda, rocm = (get_platform(n) for n in ("cpu", "cuda", "rocm"))
    assert not cpu.separate_device() and cuda.separate_device() and rocm.separate_device()
    assert (cpu.spare_workers(), cuda.spare_workers()) == (1, 4)
    assert not cpu.kernel_policy_default() and cuda.kernel_policy_default()
    assert cpu.event_factory() is None and cuda.event_factory() is torch.cuda.Event
    assert cpu.memory_pool() is None and cpu.peak_memory(torch.device("cpu")) is None
    assert cpu.device_label("", "x86_64") == "x86_64" and rocm.device_label("MI300X", "x86_64") == "MI300X"
    assert for_device(torch.device("cpu")) is cpu and for_device(torch.device("cuda", 0)) is cuda
    assert hosted("cpu") and not hosted("rocm") and not hosted("tpu")
    with pytest.raises(RuntimeError, match="no graph capture on the cpu target"):
        cpu.capture(lambda: None, torch.device("cpu"))
    assert set(PLATFORMS) >= {"cpu", "cuda", "rocm"}
