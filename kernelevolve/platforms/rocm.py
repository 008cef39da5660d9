"""AMD GPUs: Triton and HIP kernels. ROCm builds of torch expose the GPU as the "cuda" device type and
hipify `cuda_sources` given to load_inline, so the CUDA path serves HIP too. Untested here: no AMD GPU."""

from __future__ import annotations

import os
from dataclasses import dataclass

from kernelevolve.platforms.cuda import CudaPlatform


@dataclass(frozen=True)
class RocmPlatform(CudaPlatform):
    """The CUDA platform's calls, which ROCm builds of torch serve through HIP; found by the AMD kernel driver."""

    def present(self) -> bool:
        return os.path.exists("/dev/kfd")


ROCM = RocmPlatform(
    name="rocm",
    device_type="cuda",
    languages=("triton", "cuda", "cpp", "pytorch"),
    compile_baseline=True,
    note="written for ROCm builds of torch; not yet run on an AMD GPU",
    archs=("cdna3",),
    retrieval_words="gpu rocm hip triton wavefront",
    seeds=("seed_triton.py", "seed_hip.py", "seed.py"),
)
