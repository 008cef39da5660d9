"""`kernelevolve eval`: the JSON contract and exit codes of DESIGN.md."""

from __future__ import annotations

import json
import subprocess
import sys

from tests.conftest import CANDIDATES, FIXTURES

FIELDS = {"status", "correct", "reason", "speedup", "fitness", "baseline", "cases"}
CASE_FIELDS = {
    "shape",
    "correct",
    "max_abs_err",
    "max_rel_err",
    "t_candidate_ms",
    "t_eager_ms",
    "t_compile_ms",
    "speedup",
}


def run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "kernelevolve", "eval", *args], capture_output=True, text=True, timeout=300
    )


def test_correct_candidate_json_and_exit_0():
    p = run(str(FIXTURES / "scale_shift.py"), str(CANDIDATES / "scale_shift_ok.py"), "--target", "cpu", "--json")
    assert p.returncode == 0, p.stderr
    result = json.loads(p.stdout)
    assert FIELDS <= set(result)
    assert result["status"] == "ok" and result["correct"] is True and result["reason"] == ""
    assert result["baseline"] == "eager"
    assert len(result["cases"]) == 2
    for case in result["cases"]:
        assert CASE_FIELDS <= set(case)
        assert case["t_candidate_ms"] > 0 and case["t_eager_ms"] > 0 and case["t_compile_ms"] is None
        assert abs(case["speedup"] - case["t_eager_ms"] / case["t_candidate_ms"]) < 1e-6
    assert result["cases"][1]["shape"] == {"ROWS": 33, "COLS": 1000}
    assert result["cases"][1]["min_bytes"] == 2 * 33 * 1000 * 4  # input and output, float32
    assert result["cases"][1]["t_roofline_ms"] is None  # only GPU targets have a roofline time
    assert result["fitness"] == result["speedup"] > 0


def test_incorrect_candidate_exit_1_with_reason():
    p = run(str(FIXTURES / "kb_relu.py"), str(CANDIDATES / "relu_wrong.py"), "--target", "cpu", "--json")
    assert p.returncode == 1
    result = json.loads(p.stdout)
    assert result["status"] == "incorrect" and result["fitness"] == 0 and "beyond the error budget" in result["reason"]
    assert result["cases"][0]["max_abs_err"] > 0


def test_table_output_without_json():
    p = run(str(FIXTURES / "kb_relu.py"), str(CANDIDATES / "relu_ok.py"), "--target", "cpu", "--trials", "1")
    assert p.returncode == 0
    assert "ok" in p.stdout and "speedup" in p.stdout


def test_malformed_problem_exit_2_with_message():
    p = run(str(FIXTURES / "bad_get_inputs.py"), str(CANDIDATES / "relu_ok.py"), "--target", "cpu")
    assert p.returncode == 2
    assert "bad_get_inputs.py" in p.stderr and "get_inputs() raised ValueError" in p.stderr
    p = run(str(FIXTURES / "nope.py"), str(CANDIDATES / "relu_ok.py"), "--target", "cpu")
    assert p.returncode == 2 and "no such problem file" in p.stderr


def test_missing_candidate_exit_2():
    p = run(str(FIXTURES / "kb_relu.py"), str(CANDIDATES / "nope.py"), "--target", "cpu")
    assert p.returncode == 2 and "no such candidate file" in p.stderr


def test_gpu_target_without_gpu_is_a_usage_error():
    import torch

    if torch.cuda.is_available():
        return
    p = run(str(FIXTURES / "kb_relu.py"), str(CANDIDATES / "relu_ok.py"), "--target", "cuda")
    assert p.returncode == 2 and "needs a GPU" in p.stderr


def test_kernel_policy_flags():
    p = run(
        str(FIXTURES / "kb_relu.py"), str(CANDIDATES / "relu_ok.py"), "--target", "cpu", "--json", "--require-kernel"
    )
    assert p.returncode == 1, p.stderr
    result = json.loads(p.stdout)
    assert result["status"] == "rejected" and result["reason"].startswith("kernel policy:")
    assert result["checks"] == ["kernel_policy"] and result["review"] == []
    p = run(str(FIXTURES / "kb_relu.py"), str(CANDIDATES / "relu_ok.py"), "--allow-torch", "--require-kernel")
    assert p.returncode == 2 and "contradict" in p.stderr


def test_the_cpu_target_times_torch_compile_when_fitness_is_measured_against_it():
    """Off by default on the cpu target (it compiles C++ for every case), on when asked for with --baseline compile."""
    args = ("--target", "cpu", "--json", "--baseline", "compile", "--trials", "1")
    p = run(str(FIXTURES / "kb_relu.py"), str(CANDIDATES / "relu_ok.py"), *args)
    assert p.returncode == 0, p.stderr
    out = json.loads(p.stdout)
    assert out["baseline"] == "compile"
    assert all(c["t_compile_ms"] and c["compile_baseline_correct"] for c in out["cases"])
