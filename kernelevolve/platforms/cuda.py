"""NVIDIA GPUs: Triton and CUDA C++ (load_inline) kernels, timed with CUDA events."""

from kernelevolve.platforms.base import Platform

CUDA = Platform(
    name="cuda",
    device_type="cuda",
    languages=("triton", "cuda", "cpp", "pytorch"),
    compile_baseline=True,
)
