"""LayerNorm backward: given x [ROWS, HIDDEN], weight w [HIDDEN] and the upstream gradient dy, return the
gradients (dx, dw, db) of y = layer_norm(x, w, b) (the bias value does not enter them).

The reference differentiates the forward with autograd. KernelBench-format problem: Model, get_inputs(),
get_init_inputs(), plus SHAPE_CASES.
"""

import torch
import torch.nn as nn
import torch.nn.functional as F

ROWS = 1024
HIDDEN = 1024
EPS = 1e-5

SHAPE_CASES = [
    {"ROWS": 1024, "HIDDEN": 1024},  # primary
    {"ROWS": 777, "HIDDEN": 1000},  # neither a power of two
]

# dw and db sum ROWS terms. In float32 any change of summation order moves such a sum by a few ulps of its
# largest partial sums: with inputs of magnitude ~100 the partial sums reach ~1e4 and an element whose
# exact value is ~0 carries ~1e-3 of rounding in every implementation, the reference's included. The
# default float32 atol (1e-4) would reject honest kernels, so this problem widens atol.
TOLERANCE = {"atol": 1e-2, "rtol": 1e-3}


class Model(nn.Module):
    def __init__(self, eps: float = EPS):
        super().__init__()
        self.eps = eps

    def forward(self, x: torch.Tensor, w: torch.Tensor, dy: torch.Tensor):
        # The harness calls forward under torch.no_grad(): re-enable autograd locally.
        with torch.enable_grad():
            x_ = x.detach().requires_grad_(True)
            w_ = w.detach().requires_grad_(True)
            b_ = torch.zeros_like(w_, requires_grad=True)
            y = F.layer_norm(x_, (x.shape[-1],), w_, b_, self.eps)
            dx, dw, db = torch.autograd.grad(y, (x_, w_, b_), dy)
        return dx, dw, db


def get_inputs():
    return [torch.randn(ROWS, HIDDEN), torch.randn(HIDDEN), torch.randn(ROWS, HIDDEN)]


def get_init_inputs():
    return []
