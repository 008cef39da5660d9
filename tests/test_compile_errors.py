"""A candidate's mistakes as `eval` reports them (issue 46, item 3): a C++ compile error at the candidate's own file
and line, the compiler command once; no harness traceback for a missing ModelNew or a failing import."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from kernelevolve.problem.diagnostics import build_failure, source_line
from tests.conftest import EXAMPLES, FIXTURES

GXX_LOG = (FIXTURES / "logs" / "gxx_build_error.log").read_text()
BUILD = "/home/runner/.cache/kernelevolve/extensions/5d0c2e7a9b41f3e8c6a1"
ROWZ = "    for (int64_t r = 0; r < rowz; ++r) {"
EXPF = "    y[i] = expf_fast(x[i] - m);"
# The candidate's C++ as the recorded log's main.cpp held it: torch's include on line 1, then the source, whose
# lines 13 and 20 are the two errors the log names (main.cpp:14 and :21).
SOURCE = f"""
#include <cmath>
#include <cstdint>

torch::Tensor softmax(torch::Tensor x) {{
    auto y = torch::empty_like(x);
    const int64_t rows = x.size(0);
    const int64_t cols = x.size(1);
    const float* xp = x.data_ptr<float>();
    float* yp = y.data_ptr<float>();
    // one row at a time
#pragma omp parallel for
{ROWZ}
        const float* xr = xp + r * cols;
        float* yr = yp + r * cols;
        float m = -INFINITY;
        for (int64_t c = 0; c < cols; ++c) m = xr[c] > m ? xr[c] : m;
    }}
    for (int64_t i = 0; i < rows * cols; ++i)
{EXPF}
    return y;
}}
"""
CANDIDATE = f'''"""A candidate whose C++ does not compile."""

import torch
from torch.utils.cpp_extension import load_inline

ROWS = 16

CPP = r"""{SOURCE}"""

_ext = load_inline(name="softmax_cpp", cpp_sources=CPP, functions=["softmax"])
'''
GENERATED = {f"{BUILD}/main.cpp": "#include <torch/extension.h>\n" + SOURCE}


def test_source_line_finds_the_generated_line_in_the_candidate():
    main = GENERATED[f"{BUILD}/main.cpp"].splitlines()
    assert main[13] == ROWZ and main[20] == EXPF
    own = CANDIDATE.splitlines()
    assert source_line(GENERATED[f"{BUILD}/main.cpp"], 14, CANDIDATE) == own.index(ROWZ) + 1 == 20
    assert source_line(GENERATED[f"{BUILD}/main.cpp"], 21, CANDIDATE) == own.index(EXPF) + 1 == 27
    assert source_line(GENERATED[f"{BUILD}/main.cpp"], 14, "import torch\n") is None  # not the candidate's text
    twice = CANDIDATE + f'\nAGAIN = r"""{SOURCE}"""\n'
    assert source_line(GENERATED[f"{BUILD}/main.cpp"], 14, twice) is None  # two places alike: neither


def test_a_recorded_gxx_failure_starts_with_its_errors_at_the_candidates_lines():
    reason = build_failure("softmax_cpp", GXX_LOG, GENERATED, ("kernel.py", CANDIDATE))
    lines = reason.splitlines()
    assert lines[0] == "kernel.py: In function ‘at::Tensor softmax(at::Tensor)’:"
    assert lines[1] == (
        "kernel.py:20:29: error: ‘rowz’ was not declared in this scope; did you mean ‘rows’? [main.cpp:14:29]"
    )
    assert lines[2] == "   20 |     for (int64_t r = 0; r < rowz; ++r) {"  # gcc's echo, numbered as the candidate's
    assert "kernel.py:27:12: error: ‘expf_fast’ was not declared in this scope [main.cpp:21:12]" in lines
    assert reason.count("-isystem") <= 1 and reason.count("c++ -MMD") == 1  # the command once, shortened
    assert len(next(x for x in lines if "c++ -MMD" in x)) < 400
    assert sum("‘expf_fast’ was not declared" in x for x in lines) == 1  # each error once
    assert "Error building extension 'softmax_cpp'" in reason and "FAILED: [code=1] main.o" in reason
    assert "Traceback" not in reason and "kernelevolve/eval" not in reason and BUILD not in reason


def test_a_failure_without_its_sources_keeps_the_generated_places():
    reason = build_failure("softmax_cpp", GXX_LOG)
    assert reason.splitlines()[1].startswith(f"{BUILD}/main.cpp:14:29: error: ‘rowz’ was not declared")
    assert reason.count("-isystem") <= 1 and reason.count("-MMD") == 1


def _small_softmax(tmp_path) -> Path:
    """The softmax example at one small case: what is checked here is said before any input is timed, and the
    shipped 4096 x 4096 inputs (built with their float64 oracle before the candidate loads) took seconds each time."""
    path = tmp_path / "softmax_problem.py"
    source = (EXAMPLES / "softmax" / "problem.py").read_text()
    path.write_text(f'{source}\n\nSHAPE_CASES = [{{"BATCH": 33, "DIM": 1000}}]\n')
    return path


def _eval(problem: object, candidate: object) -> subprocess.CompletedProcess:
    """`kernelevolve eval` with its output captured (off a terminal)."""
    cmd = [sys.executable, "-m", "kernelevolve", "eval", str(problem), str(candidate), "--target", "cpu"]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=300)


def test_eval_of_a_cpp_compile_error_names_the_candidates_line_first(tmp_path):
    source = (EXAMPLES / "softmax" / "candidate_cpp.py").read_text()
    broken = "    const float r2 = r * rr;"
    source = source.replace("    const float r2 = r * r;", broken, 1)
    line = source.splitlines().index(broken) + 1
    kernel = tmp_path / "broken.py"
    kernel.write_text(source)
    p = _eval(_small_softmax(tmp_path), kernel)
    out = p.stdout + p.stderr
    assert p.returncode != 0 and out.startswith("compile_error"), out
    reason = out.split("reason: ", 1)[1].splitlines()
    error = next(x for x in reason if ": error: " in x)
    assert error.startswith(f"{kernel}:{line}:") and "‘rr’ was not declared in this scope" in error, out
    assert reason.index(error) <= 1 and f"{line:>5} | {broken}" in reason  # the errors come first
    assert out.count("-MMD") == 1 and out.count("-isystem") <= 1 and out.count("‘rr’ was not declared") == 1, out
    assert "Traceback" not in out


def test_eval_of_a_candidate_without_modelnew_or_with_a_failing_import_shows_no_harness_traceback(tmp_path):
    problem = _small_softmax(tmp_path)
    missing = tmp_path / "missing.py"
    missing.write_text("import torch\n\n\nclass Model(torch.nn.Module):\n    pass\n")
    p = _eval(problem, missing)
    assert "reason: the candidate does not define class ModelNew (its classes: Model)" in p.stdout, p.stdout
    assert "Traceback" not in p.stdout + p.stderr and "kernelevolve/" not in p.stdout + p.stderr
    failing = tmp_path / "failing.py"
    failing.write_text("import torch\n\n\ndef helper():\n    return undefined_name\n\n\nX = helper()\n")
    p = _eval(problem, failing)
    out = p.stdout + p.stderr
    assert "reason: loading the candidate raised NameError: name 'undefined_name' is not defined" in out, out
    assert f'File "{failing}", line 8, in <module>' in out and f'File "{failing}", line 5, in helper' in out
    assert "Traceback" not in out and "kernelevolve/" not in out
