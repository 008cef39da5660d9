"""The host CPU: C++ kernels compiled with -O3 -march=native -fopenmp, Triton through its interpreter."""

from kernelevolve.platforms.base import Platform

CPU = Platform(
    name="cpu",
    device_type="cpu",
    languages=("cpp", "triton", "pytorch"),
    interpreted=("triton",),
    compile_baseline=False,
    env={"TRITON_INTERPRET": "1"},
    note="Triton kernels run in Triton's interpreter: correctness is real, times are not measured.",
)
