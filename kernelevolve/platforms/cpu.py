"""The host CPU: C++ extensions timed for real (the candidate passes its own flags, e.g. -O3 -march=native -fopenmp;
torch adds none), Triton through its interpreter. Kernels run on the host: its memory is capped, the host clock
times them, and the checks of a separate device (roofline, launches, profiling) do not apply."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from kernelevolve.platforms.base import Platform

if TYPE_CHECKING:
    import torch


@dataclass(frozen=True)
class HostPlatform(Platform):
    """A target whose kernels run on the host's cores; its methods keep the base's host behaviour."""

    def present(self) -> bool:
        return True

    def separate_device(self) -> bool:
        return False

    def open_device(self, index: int) -> torch.device:
        import torch

        return torch.device(self.device_type)


CPU = HostPlatform(
    name="cpu",
    device_type="cpu",
    languages=("cpp", "triton", "pytorch"),
    interpreted=("triton",),
    compile_baseline=False,
    env={"TRITON_INTERPRET": "1"},
    note="Triton kernels run in Triton's interpreter: correctness is real, times are not measured.",
    archs=("x86",),
    retrieval_words="cpu c++ openmp vectorise simd cache",
    seeds=("seed_cpp.py", "seed_triton.py", "seed.py"),
)
