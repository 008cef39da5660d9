"""The kernel policy's static half: which candidates compute with their own kernels."""

from __future__ import annotations

import textwrap

import pytest

from kernelevolve.eval.worker.policy import violations
from tests.conftest import EXAMPLES, ROOT

HONEST = ROOT / "tests" / "adversarial" / "honest"


def _src(body: str, header: str = "import torch\nimport torch.nn as nn\nimport torch.nn.functional as F\n") -> str:
    return header + textwrap.dedent(body)


@pytest.mark.parametrize(
    "path",
    [
        EXAMPLES / "softmax" / "candidate_triton.py",
        EXAMPLES / "softmax" / "candidate_cpp.py",
        EXAMPLES / "rmsnorm" / "candidate_triton.py",
        EXAMPLES / "rmsnorm" / "candidate_cpp.py",
        *(HONEST / n for n in ("relu_triton.py", "softmax_triton.py", "scale_shift_triton.py", "relu_cpp.py")),
    ],
    ids=lambda p: f"{p.parent.name}/{p.name}",
)
def test_kernels_comply(path):
    assert violations(path.read_text()) == []


FORWARD = "class ModelNew(nn.Module):\n    def forward(self, x, w=None):\n        return "


@pytest.mark.parametrize(
    "body,expected",
    [
        (FORWARD + "torch.softmax(x, -1)\n", "calls torch.softmax"),
        (FORWARD + "F.relu(x)\n", "calls torch.nn.functional.relu"),
        (FORWARD + "x @ w\n", "@ operator"),
        (FORWARD + "x.sum(-1)\n", "calls .sum()"),
        (FORWARD + "torch.ops.aten.relu(x)\n", "calls torch.ops.aten.relu"),
        (FORWARD + "torch.compile(torch.nn.ReLU())(x)\n", "calls torch.compile"),
        (FORWARD + "getattr(torch, 'relu')(x)\n", "getattr"),
        (FORWARD + "getattr(x, 'soft' + 'max')(-1)\n", "computed name (getattr)"),
        (FORWARD + "getattr(x, 'softmax')(-1)\n", "looks up .softmax"),
        (FORWARD + "torch.__dict__['softmax'](x, -1)\n", ".__dict__"),
        (FORWARD + "x.__getattribute__('exp')()\n", ".__getattribute__"),
        (FORWARD + "[torch.softmax][0](x, -1)\n", "refers to torch.softmax"),
        ("import functools\n" + FORWARD + "functools.partial(torch.exp)(x)\n", "refers to torch.exp"),
        ("import operator\n" + FORWARD + "operator.methodcaller('exp')(x)\n", "operator.methodcaller"),
        ("OPS = (torch.relu,)\n" + FORWARD + "OPS[0](x)\n", "module level refers to torch.relu"),
        (FORWARD + "eval('x.exp()')\n", "dynamic code (eval)"),
        ("def helper(x):\n    return torch.matmul(x, x)\n" + FORWARD + "helper(x)\n", "helper calls torch.matmul"),
        (
            "class ModelNew(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
            "        self.lin = nn.Linear(4, 4)\n    def forward(self, x):\n        return self.lin(x)\n",
            "a torch.nn.Linear module",
        ),
        ("from problem import Model\nclass ModelNew(Model):\n    pass\n", "reference Model"),
        ("class ModelNew(nn.Module):\n    pass\n", "does not define forward"),
    ],
    ids=["softmax", "F-alias", "matmul-operator", "tensor-method", "aten-op", "compile", "getattr",
         "getattr-computed", "getattr-method", "dict", "getattribute", "value-in-list", "partial", "methodcaller",
         "module-level", "eval", "helper", "nn-module", "reference-model", "no-forward"],
)  # fmt: skip
def test_torch_compute_is_a_violation(body, expected):
    found = violations(_src(body))
    assert found and any(expected in v for v in found), found


def test_allocation_views_extensions_and_unreached_helpers_are_allowed():
    body = """
    from torch.utils.cpp_extension import load_inline
    ext = load_inline(name="e", cpp_sources="", functions=["softmax"])

    def reference_for_debugging(x):  # never called from forward
        return torch.softmax(x, -1)

    class ModelNew(nn.Module):
        def __init__(self):
            super().__init__()
            self.weight = nn.Parameter(torch.randn(4))  # __init__ may compute

        def forward(self, x):
            y = torch.empty_like(x).view(-1).contiguous()
            torch.cuda.current_stream() if x.is_cuda else None
            z = ext.softmax(x.reshape(-1, x.shape[-1]).float(), x.stride(0), x.numel())
            torch.ops.mylib.kernel(y, self.weight.detach())
            return z.view_as(x)
    """
    assert violations(_src(body)) == []


def test_own_methods_and_in_file_modules_are_followed():
    body = """
    class Inner(nn.Module):
        def forward(self, x):
            return x.exp()

    class ModelNew(nn.Module):
        def __init__(self):
            super().__init__()
            self.inner = Inner()

        def softmax(self, x):  # a method of the candidate, not the tensor op
            return self.inner(x)

        def forward(self, x):
            return self.softmax(x)
    """
    found = violations(_src(body))
    assert len(found) == 1 and "Inner.forward calls .exp()" in found[0], found
