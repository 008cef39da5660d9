"""Triton sigmoid for a float tensor of any shape, computed in float32 (benchmarks/scale_device.py's candidate
for the ATen suite's sigmoid.default: forward(x, kwargs))."""

import torch
import torch.nn as nn
import triton
import triton.language as tl

BLOCK = 1024
TUNABLES = {"BLOCK": [256, 512, 1024, 2048, 4096]}


@triton.jit
def _sigmoid(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    x = tl.load(x_ptr + offsets, mask=mask)
    y = 1.0 / (1.0 + tl.exp(-x.to(tl.float32)))
    tl.store(y_ptr + offsets, y.to(x.dtype), mask=mask)


class ModelNew(nn.Module):
    def forward(self, x: torch.Tensor, *_: object) -> torch.Tensor:
        x = x.contiguous()
        y = torch.empty_like(x)
        n = x.numel()
        if n:
            _sigmoid[(triton.cdiv(n, BLOCK),)](x, y, n, BLOCK=BLOCK)
        return y
