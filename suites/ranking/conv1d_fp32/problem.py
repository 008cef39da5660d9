"""conv1d, float32: the production conv1d of ../conv1d_fp16 in IEEE float32.

x: float32 [B, CIN, L]; nn.Conv1d(CIN, COUT, kernel_size=3, padding=1) with bias (stride 1, no dilation, one
group): out[b, co, l] = bias[co] + sum_{ci, k} w[co, ci, k] * x[b, ci, l + k - 1], zero outside [0, L).
Output: float32 [B, COUT, L].

float32 means float32 here: on CUDA, PyTorch runs float32 convolutions in TF32 by default
(torch.backends.cudnn.allow_tf32 is True), 10 mantissa bits and ~1e-3 relative error, which no float32
tolerance admits. The reference turns TF32 off for its own call, so it computes the same function on every
target; a kernel may use tensor cores only in a float32-accurate way (e.g. Triton's tf32x3, three TF32 products
per fp32 product).

Shapes: (B, CIN, COUT, L).
"""

import torch
import torch.nn as nn

B = 2048
CIN = 96
COUT = 96
L = 200
KERNEL_SIZE = 3
PADDING = 1

SHAPE_CASES = [
    {"B": 2048, "CIN": 96, "COUT": 96, "L": 200},  # primary: the paper's production shape
    {"B": 4096, "CIN": 96, "COUT": 96, "L": 200},
    {"B": 2048, "CIN": 64, "COUT": 128, "L": 100},
    {"B": 64, "CIN": 768, "COUT": 768, "L": 1024},  # out of distribution: the paper's regression shape
]

# Sums of CIN * 3 (288-2304) products: at x100 inputs outputs reach ~60 and fp32 accumulation in another order
# differs by up to 3e-5 (measured against a float64 convolution); atol 1e-3 leaves room for tf32x3's error on top.
TOLERANCE = {"atol": 1e-3, "rtol": 1e-4}


def FLOPS():
    return 2.0 * B * COUT * L * CIN * KERNEL_SIZE


class Model(nn.Module):
    def __init__(self, cin: int, cout: int, kernel_size: int = KERNEL_SIZE, padding: int = PADDING):
        super().__init__()
        self.conv = nn.Conv1d(cin, cout, kernel_size, padding=padding)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        with torch.backends.cudnn.flags(enabled=True, allow_tf32=False):
            return self.conv(x)


def get_inputs():
    return [torch.randn(B, CIN, L)]


def get_init_inputs():
    return [CIN, COUT]
