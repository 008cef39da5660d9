"""The host CPU: C++ extensions timed for real (the candidate passes its own flags, e.g. -O3 -march=native -fopenmp;
torch adds none), Triton through its interpreter."""

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
