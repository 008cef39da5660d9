"""The program Nsight Compute profiles (`--profile ncu`): one forward call of the candidate on one shape case (the
first unless CASE_INDEX names another: benchmarks run it by hand under ncu for a case a target names).

    python -m kernelevolve.eval.worker.ncu_probe PROBLEM CANDIDATE SEED DEVICE_INDEX [TIMEOUT_S [CASE_INDEX]]

TIMEOUT_S 0: no self-imposed limit.

Run by eval.profiling under `ncu --profile-from-start off`: the model is built and called once unprofiled (Triton
compiles and autotunes there), then exactly one forward call is bracketed by cudaProfilerStart / Stop, so ncu
sees the candidate's kernels and not the input construction. The process stops itself after TIMEOUT_S.
"""

from __future__ import annotations

import signal
import sys


def main(argv: list[str]) -> int:
    problem_path, candidate_path, seed, device_index = argv[0], argv[1], int(argv[2]), int(argv[3])
    if len(argv) > 4 and float(argv[4]) > 0:
        signal.alarm(max(1, int(float(argv[4]))))  # ncu may be killed on its timeout and leave this process

    import torch

    from kernelevolve.eval.builds import extension_cache
    from kernelevolve.platforms import get_platform
    from kernelevolve.problem.candidate import load_candidate
    from kernelevolve.problem.inputs import build_init_inputs, build_inputs, build_model, problem_dtype
    from kernelevolve.problem.problem import bind_case, case_defaults, exec_problem, shape_cases

    module = exec_problem(problem_path)
    cases = shape_cases(module)
    index = int(argv[5]) if len(argv) > 5 else 0
    if not 0 <= index < len(cases):
        print(f"{problem_path}: no shape case {index} (it has {len(cases)})", file=sys.stderr)
        return 2
    platform = get_platform("cuda")  # Nsight Compute profiles NVIDIA GPUs
    device = torch.device(platform.device_type, device_index)
    platform.set_device(device)
    bind_case(module, cases[index], case_defaults(module, cases))
    dtype = problem_dtype(module)
    init = build_init_inputs(module)
    reference = build_model(module.Model, init, seed, dtype, device)
    inputs = build_inputs(module, seed ^ 0x9E37, "given", dtype, device)
    extension_cache.install()  # the worker built the candidate's extensions already: reuse those builds
    candidate = load_candidate(candidate_path)
    model = build_model(candidate.ModelNew, init, seed, dtype, device, reference=reference)
    with torch.no_grad():
        model(*inputs)  # JIT compilation and autotuning, not profiled
        platform.synchronize(device)
        with platform.profiled():
            model(*inputs)
            platform.synchronize(device)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
