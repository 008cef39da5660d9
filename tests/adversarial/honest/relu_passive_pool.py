"""PyTorch ReLU that checks, in the candidate's process, that OpenMP pools there sleep when their work is done
(OMP_WAIT_POLICY=PASSIVE, set by the harness before any library loads): a pool that spins after an honest kernel's
call takes the cores its reference is timed on next."""

import os

import torch
import torch.nn as nn

if os.environ.get("OMP_WAIT_POLICY") != "PASSIVE":
    raise RuntimeError(f"OMP_WAIT_POLICY is {os.environ.get('OMP_WAIT_POLICY')!r} in the candidate's process")


class ModelNew(nn.Module):
    def forward(self, x):
        return torch.relu(x)
