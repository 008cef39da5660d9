"""C++ kernels for the ATen fixture problems (tests/fixtures/aten), and a run of each in a store whose evaluations
are test doubles, exported as a kernel directory: what tests/test_enable.py enables on a small model.

The kernels are real C++ compiled through torch.utils.cpp_extension (`load`, with no torch header, so a build takes
about a second rather than load_inline's minute) and called through ctypes; each counts its calls, so a test sees
which calls reached it. Their outputs are checked against ATen by the tests, not taken from the doubles.
"""

from __future__ import annotations

from pathlib import Path

from kernelevolve.kernels.write import export_kernel_dir
from kernelevolve.result import CaseResult, EvalResult, Status
from kernelevolve.store.store import NodeRecord, Store
from tests.conftest import FIXTURES

PROBLEMS = FIXTURES / "aten"

TEMPLATE = '''"""C++ {name} for contiguous float32 tensors, called through ctypes."""

import ctypes
import hashlib
import os
import tempfile

import torch
import torch.nn as nn
from torch.utils.cpp_extension import load

CPP = r"""
#include <cmath>
#include <cstdint>
extern "C" {cpp}
"""


def _library():
    digest = hashlib.sha256(CPP.encode()).hexdigest()[:12]
    folder = os.path.join(tempfile.gettempdir(), f"kernelevolve-test-{name}-{{digest}}")
    os.makedirs(folder, exist_ok=True)
    source = os.path.join(folder, "{name}.cpp")
    with open(source, "w") as f:
        f.write(CPP)
    return ctypes.CDLL(load(name="kernelevolve_test_{name}", sources=[source], build_directory=folder,
                            is_python_module=False, extra_cflags=["-O2"]))


_lib = _library()


def _p(t):
    return ctypes.c_void_p(t.data_ptr())


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.calls = 0

    def forward(self, {args}):
        self.calls += 1
        {body}
'''

KERNELS = {
    "relu": (
        "void relu(const float* x, float* y, int64_t n) { for (int64_t i = 0; i < n; ++i) "
        "y[i] = x[i] > 0 ? x[i] : 0; }",
        "x",
        "y = torch.empty_like(x)\n        _lib.relu(_p(x), _p(y), ctypes.c_int64(x.numel()))\n        return y",
    ),
    "add": (
        "void add(const float* a, const float* b, float* y, int64_t n) { for (int64_t i = 0; i < n; ++i) "
        "y[i] = a[i] + b[i]; }",
        "a, b",
        "y = torch.empty_like(a)\n        _lib.add(_p(a), _p(b), _p(y), ctypes.c_int64(a.numel()))\n        return y",
    ),
    "softmax": (
        "void softmax(const float* x, float* y, int64_t rows, int64_t cols) { for (int64_t r = 0; r < rows; ++r) {"
        " const float* in = x + r * cols; float* out = y + r * cols; float m = in[0];"
        " for (int64_t c = 1; c < cols; ++c) m = std::fmax(m, in[c]); double s = 0;"
        " for (int64_t c = 0; c < cols; ++c) { out[c] = std::exp(in[c] - m); s += out[c]; }"
        " for (int64_t c = 0; c < cols; ++c) out[c] = out[c] / s; } }",
        "x, dim, half_to_float",
        "y = torch.empty_like(x)\n        rows, cols = (ctypes.c_int64(n) for n in x.shape)"
        "\n        _lib.softmax(_p(x), _p(y), rows, cols)\n        return y",
    ),
}


def kernel_source(name: str) -> str:
    cpp, args, body = KERNELS[name]
    return TEMPLATE.format(name=name, cpp=cpp, args=args, body=body)


def evaluation(speedups: list[float]) -> EvalResult:
    """A correct evaluation (a double: the tests compare outputs with ATen themselves) with these speedups."""
    cases = [
        CaseResult(shape={}, correct=True, speedup=s, t_candidate_ms=1.0, t_eager_ms=s, t_compile_ms=s * 0.8,
                   error_ratio=0.5, correctness="measured")
        for s in speedups
    ]  # fmt: skip
    return EvalResult(status=Status.OK, correct=True, cases=cases, target="cpu", device="cpu (test double)",
                      versions={"torch": "2.13.0", "harness": "test"}).finalize()  # fmt: skip


def record_run(store: Store, problem: Path, source: str, speedups: list[float]):
    """A run of `problem` whose one node is `source`, evaluated with `speedups` per case."""
    run = store.create_run(
        problem_path=str(problem), problem_hash="h", platform="cpu", config={}, config_hash="c", budget=1
    )
    store.add_node(run.id, NodeRecord("seed", source, "s", {}, [], evaluation(speedups)), strategy_state={})
    return run


def kernel_dir(tmp: Path, sources: dict[str, str] | None = None) -> Path:
    """relu, add (its second, larger case lost to ATen) and softmax exported into tmp/kernels."""
    store = Store(tmp / "runs")
    folder = tmp / "kernels"
    for name, speedups in (("relu", [2.0]), ("add", [1.5, 0.8]), ("softmax", [3.0])):
        source = (sources or {}).get(name) or kernel_source(name)
        export_kernel_dir(store, record_run(store, PROBLEMS / f"{name}.py", source, speedups), folder)
    return folder
