"""A platform is a "hardware interpreter": what a target runs, how its worker is set up, how it is timed."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path


def cache_dir() -> Path:
    """Where compiled extensions and measured device peaks persist between evaluations."""
    root = os.environ.get("KERNELEVOLVE_CACHE") or os.path.join(
        os.environ.get("XDG_CACHE_HOME", os.path.expanduser("~/.cache")), "kernelevolve"
    )
    return Path(root)


@dataclass(frozen=True)
class Platform:
    name: str
    device_type: str  # the torch device type its kernels run on
    languages: tuple[str, ...]  # kernel languages a candidate may use here
    interpreted: tuple[str, ...] = ()  # languages that run correctly but are not timed (Triton on cpu)
    compile_baseline: bool = False  # whether the torch.compile baseline is timed by default
    env: dict[str, str] = field(default_factory=dict)  # set in the worker before torch is imported
    note: str = ""

    def worker_env(self) -> dict[str, str]:
        return dict(self.env)

    def unsupported(self, languages: list[str]) -> list[str]:
        return [lang for lang in languages if lang not in self.languages]

    def is_interpreted(self, languages: list[str]) -> bool:
        return any(lang in self.interpreted for lang in languages)
