"""Triton ReLU for a float tensor of any shape (benchmarks/scale_device.py's small GPU candidate): the
tests/fixtures/kb_relu.py problem (forward(x)) and the ATen suite's relu.default (forward(x, kwargs))."""

import torch
import torch.nn as nn
import triton
import triton.language as tl

BLOCK = 1024
TUNABLES = {"BLOCK": [256, 512, 1024, 2048, 4096]}


@triton.jit
def _relu(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    x = tl.load(x_ptr + offsets, mask=mask)
    tl.store(y_ptr + offsets, tl.where(x < 0, tl.zeros_like(x), x), mask=mask)  # NaN stays NaN, as in torch


class ModelNew(nn.Module):
    def forward(self, x: torch.Tensor, *_: object) -> torch.Tensor:
        x = x.contiguous()
        y = torch.empty_like(x)
        n = x.numel()
        if n:
            _relu[(triton.cdiv(n, BLOCK),)](x, y, n, BLOCK=BLOCK)
        return y
