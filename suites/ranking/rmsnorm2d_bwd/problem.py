"""RMSNorm 2D, backward: the gradients of y = x * rstd * w, rstd = 1 / sqrt(mean(x**2, -1) + eps), with respect to
x and w (KernelEvolve paper: 17x over PyTorch on MTIA).

Inputs: x float32 [ROWS, COLS], w float32 [COLS], dy float32 [ROWS, COLS] (the gradient of y). Outputs:

    xhat = x * rstd                                         (rstd per row)
    dx   = rstd * (w * dy - xhat * mean(w * dy * xhat, -1))  float32 [ROWS, COLS]
    dw   = sum over rows of dy * xhat                       float32 [COLS]

The closed form a ranking engineer writes in a custom autograd.Function's backward, recomputing rstd (the
forward did not save it). dw is a reduction over all ROWS rows: the kernel needs a cross-row (cross-program)
reduction, where the forward had none.

Shapes: (ROWS, COLS).
"""

import torch
import torch.nn as nn

ROWS = 32768
COLS = 256
EPS = 1e-6

SHAPE_CASES = [
    {"ROWS": 32768, "COLS": 256},  # primary
    {"ROWS": 65536, "COLS": 128},  # dw: a 65536-row reduction
    {"ROWS": 8192, "COLS": 1024},
    {"ROWS": 20000, "COLS": 96},  # nothing a power of two
    {"ROWS": 512, "COLS": 8192},  # out of distribution: few, very wide rows
]

# dw sums up to 65536 products per column, dx's row mean 8192. Rounding in another order (PyTorch's against the
# Triton seed's blocked two-level sum) needed atol up to 5e-4 at unit scale (heavy-tailed, 32768 x 256: measured),
# so atol is 5e-3, still far below what dropping a term of dx (~1 / sqrt(COLS)) or a row of dw changes. x100
# ("large") dy scales that error by 100: left out.
TOLERANCE = {"atol": 5e-3, "rtol": 1e-4}
INPUT_DISTRIBUTIONS = ["given", "normal", "heavy_tailed", "uniform_signed"]


class Model(nn.Module):
    def __init__(self, eps: float = EPS):
        super().__init__()
        self.eps = eps

    def forward(self, x: torch.Tensor, w: torch.Tensor, dy: torch.Tensor):
        rstd = torch.rsqrt(x.pow(2).mean(dim=-1, keepdim=True) + self.eps)
        xhat = x * rstd
        wdy = w * dy
        dx = rstd * (wdy - xhat * (wdy * xhat).mean(dim=-1, keepdim=True))
        dw = (dy * xhat).sum(dim=0)
        return dx, dw


def get_inputs():
    return [torch.randn(ROWS, COLS), torch.randn(COLS), torch.randn(ROWS, COLS)]


def get_init_inputs():
    return []
