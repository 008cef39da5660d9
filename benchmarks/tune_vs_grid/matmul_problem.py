"""fp16 matrix product C = A @ B, the tuning benchmark's problem: its Triton kernel's speed depends strongly
on tile sizes, warps and pipeline stages."""

import torch
import torch.nn as nn

M = 4096
N = 4096
K = 4096
DTYPE = torch.float16
TOLERANCE = {"atol": 1e-2, "rtol": 1e-2}
INPUT_DISTRIBUTIONS = ["given", "normal"]  # fp16 products of large-magnitude inputs overflow


class Model(nn.Module):
    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return a @ b


def get_inputs():
    return [torch.randn(M, K) / 8, torch.randn(K, N) / 8]


def get_init_inputs():
    return []
