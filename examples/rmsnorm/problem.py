"""Reference problem: fused residual-add + RMSNorm with a learned scale.

y = rmsnorm(x + residual) * weight, where rmsnorm(z) = z / sqrt(mean(z**2, -1) + eps).
KernelBench-compatible problem file: ``Model``, ``get_inputs()`` and ``get_init_inputs()``,
plus the optional ``SHAPE_CASES`` / ``DTYPE`` extensions.
"""

import torch
import torch.nn as nn

# Size constants; the harness re-binds them for each entry of SHAPE_CASES.
ROWS = 4096
HIDDEN = 4096

SHAPE_CASES = [
    {"ROWS": 4096, "HIDDEN": 4096},  # primary: 2 x 64 MiB in + 64 MiB out
    {"ROWS": 1024, "HIDDEN": 3000},  # HIDDEN not a power of two
    {"ROWS": 1000, "HIDDEN": 1536},  # ROWS and HIDDEN not powers of two
]

DTYPE = torch.float32

EPS = 1e-6


class Model(nn.Module):
    """y = (x + residual) / sqrt(mean((x + residual)**2, -1) + eps) * weight."""

    def __init__(self, hidden: int, eps: float = EPS):
        super().__init__()
        self.eps = eps
        # randn (not ones) so that a candidate which ignores the copied weight fails.
        self.weight = nn.Parameter(torch.randn(hidden))

    def forward(self, x: torch.Tensor, residual: torch.Tensor) -> torch.Tensor:
        z = x + residual
        return z / torch.sqrt(z.pow(2).mean(dim=-1, keepdim=True) + self.eps) * self.weight


def get_inputs():
    # Read the module constants at call time so SHAPE_CASES re-binding takes effect.
    return [torch.randn(ROWS, HIDDEN), torch.randn(ROWS, HIDDEN)]


def get_init_inputs():
    return [HIDDEN]
