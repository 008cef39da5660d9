"""PyTorch rewrite with its own Python threads, each joined before forward returns (allowed: no work escapes)."""

import threading

import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, x):
        out = torch.empty_like(x)
        half = x.shape[0] // 2

        def work(lo, hi):
            torch.clamp_min(x[lo:hi], 0.0, out=out[lo:hi])

        threads = [threading.Thread(target=work, args=b) for b in ((0, half), (half, x.shape[0]))]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        return out
