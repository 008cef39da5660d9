"""Where honest and wrong kernels fall under the measured correctness rule, on the cpu: each candidate's error over
the reference's own rounding error (the ratio the 16x limit applies to) for reorderings of sums, scans and GEMMs,
and for wrong ones (bfloat16 inputs, TF32-rounded operands, one part in a thousand, an off-by-one scan).

    python benchmarks/error_budget.py        # one line per candidate: its ratio and the verdict
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from kernelevolve.eval.rules import BUDGET_MULTIPLE  # noqa: E402
from kernelevolve.eval.worker.correctness import Criterion  # noqa: E402
from kernelevolve.eval.worker.oracle import Float64Reference, unit_roundoff  # noqa: E402

MEASURED = Criterion("measured", 1e-4, 1e-4, BUDGET_MULTIPLE)


class Fn(torch.nn.Module):
    def __init__(self, fn: Callable) -> None:
        super().__init__()
        self.fn = fn

    def forward(self, *args):
        return self.fn(*args)


def tf32(t: torch.Tensor) -> torch.Tensor:
    bits = t.contiguous().view(torch.int32)
    return ((bits + 0x1000) & ~0x1FFF).view(torch.float32)


def sequential(x: torch.Tensor, lanes: int = 1, scan: bool = False) -> torch.Tensor:
    """A float32 loop over the last dimension with `lanes` accumulators (a scalar C++ loop when lanes is 1)."""
    if scan:
        out, acc = torch.empty_like(x), torch.zeros(x.shape[:-1])
        for i in range(x.shape[-1]):
            acc = acc + x[..., i]
            out[..., i] = acc
        return out
    parts, acc = x.reshape(x.shape[0], -1, lanes), torch.zeros(x.shape[0], lanes)
    for i in range(parts.shape[1]):
        acc += parts[:, i]
    return acc.sum(-1)


def blocked_scan(x: torch.Tensor, block: int = 1024) -> torch.Tensor:
    inner = torch.cumsum(x.reshape(*x.shape[:-1], -1, block), -1)
    carry = torch.cumsum(inner[..., -1], -1) - inner[..., -1]
    return (inner + carry[..., None]).reshape(x.shape)


def k_loop(a: torch.Tensor, b: torch.Tensor, step: int = 64) -> torch.Tensor:
    acc = torch.zeros(a.shape[0], b.shape[1])
    for k in range(0, a.shape[1], step):
        acc += a[:, k : k + step] @ b[k : k + step]
    return acc


def report(name: str, fn: Callable, inputs: list, candidates: dict[str, Callable], allow_tf32: bool = False) -> None:
    ref = fn(*inputs)
    dtype = inputs[0].dtype
    oracle = Float64Reference(Fn(fn), dtype, unit_roundoff(dtype, allow_tf32)).measure(inputs, ref, 1)
    print(name + (" (--allow-tf32)" if allow_tf32 else ""))
    for label, candidate in candidates.items():
        cmp = MEASURED.check(candidate(*inputs), ref, oracle=oracle)
        print(f"   {label:30s} {cmp.error_ratio:12.1f}x  {'accepted' if cmp.ok else 'rejected'}")


def main() -> None:
    torch.manual_seed(0)
    for scale in (1, 100):
        x = torch.randn(16, 32768) * scale
        report(
            f"cumsum over 32768, x{scale}",
            lambda x: torch.cumsum(x, -1),
            [x],
            {
                "blocked (1024)": blocked_scan,
                "float64 accumulation": lambda x: torch.cumsum(x.double(), -1).float(),
                "sequential float32 loop": lambda x: sequential(x, scan=True),
                "bfloat16 inputs": lambda x: torch.cumsum(x.bfloat16().float(), -1),
                "off-by-one (exclusive)": lambda x: torch.cumsum(x, -1) - x,
                "one part in a thousand": lambda x: torch.cumsum(x, -1) * (1 + 1e-3),
            },
        )
        y = torch.randn(256, 32768) * scale
        report(
            f"sum over 32768, x{scale}",
            lambda y: y.sum(-1),
            [y],
            {
                "8 float32 accumulators": lambda y: sequential(y, 8),
                "sequential float32 loop": sequential,
                "bfloat16 inputs": lambda y: y.bfloat16().float().sum(-1),
            },
        )
    for k in (1024, 8192):
        for label, draw in (("uniform [0, 1)", torch.rand), ("normal", torch.randn)):
            a, b = draw(256, k), draw(k, 256)
            rounded = {"TF32 operands": lambda a, b: tf32(a) @ tf32(b)}
            report(f"matmul K={k}, {label}", lambda a, b: a @ b, [a, b], {"k-loop of 64": k_loop, **rounded})
            report(f"matmul K={k}, {label}", lambda a, b: a @ b, [a, b], rounded, allow_tf32=True)
    x = torch.randn(64, 4096) * 100

    def two_pass(x):
        e = torch.exp(x - x.max(-1, keepdim=True).values)
        return e / e.sum(-1, keepdim=True)

    report("softmax of x100 logits", lambda x: torch.softmax(x, -1), [x], {"two-pass": two_pass})
    for dtype in (torch.bfloat16, torch.float16):
        h = torch.randn(64, 4096).to(dtype)
        scaled = {
            f"off by {p}%": (lambda x, p=p: (torch.softmax(x, -1).double() * (1 + p / 100)).to(x.dtype))
            for p in (1, 3, 5, 10)
        }
        honest = {"float32 inside, rounded once": lambda x: torch.softmax(x.float(), -1).to(x.dtype)}
        report(
            f"softmax in {str(dtype).removeprefix('torch.')}", lambda x: torch.softmax(x, -1), [h], {**honest, **scaled}
        )


if __name__ == "__main__":
    main()
