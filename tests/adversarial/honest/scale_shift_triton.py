"""Triton x * weight + 1 with the learned weight broadcast along rows (a 2-D tile per program)."""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _scale_shift(x_ptr, w_ptr, y_ptr, rows, cols, BLOCK_R: tl.constexpr, BLOCK_C: tl.constexpr):
    r = tl.program_id(0) * BLOCK_R + tl.arange(0, BLOCK_R)
    c = tl.arange(0, BLOCK_C)
    mask = (r[:, None] < rows) & (c[None, :] < cols)
    offs = r[:, None] * cols + c[None, :]
    x = tl.load(x_ptr + offs, mask=mask)
    w = tl.load(w_ptr + c, mask=c < cols)
    tl.store(y_ptr + offs, x * w[None, :] + 1.0, mask=mask)


class ModelNew(nn.Module):
    def __init__(self, cols: int):
        super().__init__()
        self.weight = nn.Parameter(torch.empty(cols))  # values come from the reference's state dict

    def forward(self, x):
        x = x.contiguous()
        y = torch.empty_like(x)
        rows, cols = x.shape
        block_r = 64
        grid = (triton.cdiv(rows, block_r),)
        _scale_shift[grid](
            x, self.weight.detach(), y, rows, cols, BLOCK_R=block_r, BLOCK_C=triton.next_power_of_2(cols)
        )
        return y
