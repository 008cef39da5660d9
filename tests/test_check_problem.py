"""`kernelevolve check-problem`: every shipped problem is sound; an unsound one and a malformed one are told
apart by exit status."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from kernelevolve.eval.probes import check_problem, probe_source
from kernelevolve.problem.problem import load_problem
from tests.conftest import EXAMPLES, FIXTURES, ROOT

ADVERSARIAL = ROOT / "tests" / "adversarial" / "problems"
SHIPPED = [
    *sorted(EXAMPLES.glob("*/problem.py")),
    *sorted(p for p in FIXTURES.glob("*.py") if not p.name.startswith("bad_")),
    ADVERSARIAL / "softmax_small.py",
]


def run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "kernelevolve", "check-problem", *args], capture_output=True, text=True, timeout=600
    )


@pytest.mark.parametrize("path", SHIPPED, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_shipped_problem_is_sound(path):
    report = check_problem(load_problem(path), "cpu", trials=1)
    assert report.sound, (report.passing, report.warnings, report.probes)
    by_name = {p.name: p for p in report.probes}
    assert by_name["reference"].passed and not any(by_name[n].passed for n in ("zeros", "first_input", "mean"))


def test_tiny_outputs_are_flagged_with_exit_1_under_a_fixed_tolerance(tmp_path):
    fixed = tmp_path / "tiny_fixed.py"
    fixed.write_text((ADVERSARIAL / "tiny_outputs.py").read_text() + '\nTOLERANCE = {"atol": 1e-4, "rtol": 1e-4}\n')
    p = run(str(fixed), "--target", "cpu", "--json")
    assert p.returncode == 1, p.stderr
    report = json.loads(p.stdout)
    assert not report["sound"] and any("below the tolerance" in w for w in report["warnings"])
    assert report["passing"] == []  # the normalised-error check still catches zeros and the mean
    # The measured rule scales with the outputs: the same problem without TOLERANCE is sound.
    measured = check_problem(load_problem(ADVERSARIAL / "tiny_outputs.py"), "cpu", trials=1)
    assert measured.sound and not measured.warnings, (measured.warnings, measured.probes)


def test_nondeterministic_reference_and_passing_probe_are_reported(tmp_path):
    noisy = tmp_path / "noisy.py"
    noisy.write_text(
        "import torch\nclass Model(torch.nn.Module):\n    def forward(self, x):\n"
        "        return x + torch.rand_like(x)\n"
        "def get_inputs():\n    return [torch.randn(8, 64)]\ndef get_init_inputs():\n    return []\n"
    )
    report = check_problem(load_problem(noisy), "cpu", trials=1)
    assert any("not deterministic" in w or "deterministic" in w for w in report.warnings), report.warnings
    zeros = tmp_path / "zeros.py"
    zeros.write_text(
        "import torch\nclass Model(torch.nn.Module):\n    def forward(self, x):\n        return x * 0\n"
        "def get_inputs():\n    return [torch.randn(8, 64)]\ndef get_init_inputs():\n    return []\n"
    )
    report = check_problem(load_problem(zeros), "cpu", trials=1)
    assert {p.name for p in report.passing} >= {"zeros", "mean"} and not report.sound


def test_malformed_problem_exit_2():
    p = run(str(FIXTURES / "bad_get_inputs.py"), "--target", "cpu")
    assert p.returncode == 2 and "get_inputs() raised ValueError" in p.stderr


def test_probe_sources_are_candidates():
    source = probe_source("zeros", FIXTURES / "kb_relu.py")
    assert "class ModelNew(_problem.Model)" in source and "zeros_like" in source
    compile(source, "probe", "exec")
