"""A swap directory for tests/test_swap.py: the tiny model of tests/model_entries.py (two Linear -> LayerNorm ->
GELU blocks), its LayerNorm + GELU region with a C++ kernel in a store whose evaluation is a test double, exported
as `kernelevolve model --search` exports it, and the model's state_dict and example inputs beside it.

The kernel is real C++ compiled through torch.utils.cpp_extension (`load`, no torch header: about a second; the
library built is reused by later runs) and called through ctypes; the library counts its calls, so a test sees
which forwards reached it. Its outputs are checked against the model by the tests, not taken from the double.
"""

from __future__ import annotations

from pathlib import Path

from kernelevolve.kernels.enable import source_module
from kernelevolve.model.region_export import export_region, save_model
from kernelevolve.model.region_file import REGIONS
from kernelevolve.model.regions import find_regions
from kernelevolve.model.table import Row
from kernelevolve.store.models import Run
from kernelevolve.store.store import Store
from tests.aten_kernels import record_run
from tests.model_entries import tiny

LN_GELU = '''"""LayerNorm over the last 32 values, then exact GELU: C++ for contiguous float32, through ctypes."""

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
static int64_t calls = 0;
extern "C" int64_t ln_gelu_calls() { return calls; }
extern "C" void ln_gelu(const float* x, const float* w, const float* b, float* y, int64_t rows, int64_t cols) {
  ++calls;
  for (int64_t r = 0; r < rows; ++r) {
    const float* in = x + r * cols; float* out = y + r * cols; double mean = 0, var = 0;
    for (int64_t c = 0; c < cols; ++c) mean += in[c];
    mean /= cols;
    for (int64_t c = 0; c < cols; ++c) var += (in[c] - mean) * (in[c] - mean);
    double inv = 1.0 / std::sqrt(var / cols + 1e-5);
    for (int64_t c = 0; c < cols; ++c) {
      double v = (in[c] - mean) * inv * w[c] + b[c];
      out[c] = (float)(0.5 * v * (1.0 + std::erf(v / std::sqrt(2.0))));
    }
  }
}
"""


def _library():
    digest = hashlib.sha256(CPP.encode()).hexdigest()[:12]
    folder = os.path.join(tempfile.gettempdir(), f"kernelevolve-test-ln_gelu-{digest}")
    os.makedirs(folder, exist_ok=True)
    built = os.path.join(folder, "kernelevolve_test_ln_gelu.so")
    if os.path.exists(built):  # built by an earlier test run: torch's load would only check it again (seconds)
        return ctypes.CDLL(built)
    source = os.path.join(folder, "ln_gelu.cpp")
    with open(source, "w") as f:
        f.write(CPP)
    return ctypes.CDLL(load(name="kernelevolve_test_ln_gelu", sources=[source], build_directory=folder,
                            is_python_module=False, extra_cflags=["-O2"]))


_lib = _library()
_lib.ln_gelu_calls.restype = ctypes.c_int64


def _p(t):
    return ctypes.c_void_p(t.data_ptr())


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.w0 = nn.Parameter(torch.ones(32))
        self.w1 = nn.Parameter(torch.zeros(32))

    def forward(self, x0):
        FAIL
        x = x0.contiguous()
        y = torch.empty_like(x)
        _lib.ln_gelu(_p(x), _p(self.w0), _p(self.w1), _p(y), ctypes.c_int64(x.shape[0]), ctypes.c_int64(x.shape[1]))
        return y
'''


def kernel_source(fail: str = "") -> str:
    """The C++ kernel; `fail`: a statement its forward runs first (a kernel that raises at swap-in)."""
    return LN_GELU.replace("FAIL", fail or "pass")


def kernel_calls() -> int:
    """How many times the C++ kernel ran in this process (the library is loaded once, whoever loads it)."""
    return source_module("ln_gelu_counter", kernel_source())._lib.ln_gelu_calls()


def region_run(tmp: Path, source: str | None = None) -> tuple[Store, Run, Row]:
    """The tiny model's LayerNorm + GELU region as a problem under tmp, and a run of it in tmp/runs whose one
    node is the kernel, 2x over eager and 1.6x over the faster compile (by the double); the region's table row."""
    model, args = tiny()
    (region,) = find_regions(model.eval(), args, {}, "cpu")
    problem = tmp / region.name / "problem.py"
    problem.parent.mkdir(parents=True)
    problem.write_text(region.source)
    store = Store(tmp / "runs")
    run = record_run(store, problem, source or kernel_source(), [2.0])
    row = Row(region.name, region.kind, region.ops, region.signature, region.count, 1.0, 0.5, status="ok", run=run.id)
    return store, run, row


def swap_dir(tmp: Path) -> tuple[Path, str]:
    """tmp/swap: the region's file as the search exports it, the model's state_dict and example inputs. Returns
    the folder and the region's name."""
    store, run, row = region_run(tmp)
    folder = tmp / "swap"
    _, entry = export_region(store, run, row, folder / REGIONS)
    assert entry is not None
    model, args = tiny()
    save_model(folder, model, args, {})
    return folder, row.name
