"""Entries for tests/test_model.py: a tiny model of Linear, LayerNorm and GELU layers, and entries that are wrong
in each way `kernelevolve model` must say in one line."""

from __future__ import annotations

import torch
import torch.nn as nn


class Tiny(nn.Module):
    """Two blocks of Linear -> LayerNorm -> GELU: the same operators at the same shapes twice (one row each)."""

    def __init__(self, width: int = 32) -> None:
        super().__init__()
        self.blocks = nn.ModuleList(
            nn.Sequential(nn.Linear(width, width), nn.LayerNorm(width), nn.GELU()) for _ in range(2)
        )
        self.head = nn.Linear(width, 8)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for block in self.blocks:
            x = block(x)
        return self.head(x)


def tiny() -> tuple[nn.Module, tuple[torch.Tensor]]:
    torch.manual_seed(0)
    return Tiny(), (torch.randn(16, 32),)


class Fails(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        raise RuntimeError("shapes do not match")


def fails() -> tuple[nn.Module, tuple[torch.Tensor]]:
    return Fails(), (torch.randn(2),)


def no_model() -> tuple[int, tuple[torch.Tensor]]:
    return 3, (torch.randn(2),)
