"""AMD GPUs: Triton and HIP kernels. ROCm builds of torch expose the GPU as the "cuda" device type and
hipify `cuda_sources` given to load_inline, so the CUDA path serves HIP too. Untested here: no AMD GPU."""

from kernelevolve.platforms.base import Platform

ROCM = Platform(
    name="rocm",
    device_type="cuda",
    languages=("triton", "cuda", "cpp", "pytorch"),
    compile_baseline=True,
    note="written for ROCm builds of torch; not yet run on an AMD GPU",
)
