"""The float32 precision policy of an evaluation, set before the problem runs and held until the verdict.

TF32 inside a float32 problem is the run's choice (`--allow-tf32`), never a kernel's: by default cuBLAS and
cuDNN compute float32 in float32 (cuDNN's own default is TF32) and a Triton `tl.dot` without an explicit
`input_precision` is IEEE float32, so the reference, the baseline and a candidate that states nothing all
compute faithfully. A candidate that changes the policy is rejected (harness._tampered).
"""

from __future__ import annotations

import os

import torch

TRITON_F32_DEFAULT = "TRITON_F32_DEFAULT"  # Triton's default input precision of tl.dot on float32 (cache-keyed)


def apply(allow_tf32: bool) -> None:
    torch.backends.cuda.matmul.allow_tf32 = allow_tf32
    torch.backends.cudnn.allow_tf32 = allow_tf32
    if allow_tf32:
        os.environ.pop(TRITON_F32_DEFAULT, None)
    else:
        os.environ[TRITON_F32_DEFAULT] = "ieee"


def _global_state() -> tuple[object, ...]:
    """What else of torch's process-wide state a candidate could leave changed to slow the reference or the timer
    (one thread instead of the pool, another default dtype, deterministic kernels): in GLOBAL_NAMES' order."""
    matmul = torch.backends.cuda.matmul
    return (
        torch.get_num_threads(),
        torch.get_num_interop_threads(),
        torch.get_default_dtype(),
        torch.are_deterministic_algorithms_enabled(),
        torch.backends.cudnn.deterministic,
        torch.backends.cudnn.benchmark,
        matmul.allow_fp16_reduced_precision_reduction,
        matmul.allow_bf16_reduced_precision_reduction,
    )


def state() -> tuple[object, ...]:
    return (
        torch.backends.cuda.matmul.allow_tf32,
        torch.backends.cudnn.allow_tf32,
        torch.get_float32_matmul_precision(),
        os.environ.get(TRITON_F32_DEFAULT),
        *_global_state(),
    )


NAMES = (
    "torch.backends.cuda.matmul.allow_tf32",
    "torch.backends.cudnn.allow_tf32",
    "torch.float32_matmul_precision",
    f"os.environ[{TRITON_F32_DEFAULT}]",
)
GLOBAL_NAMES = (
    "torch.get_num_threads()",
    "torch.get_num_interop_threads()",
    "torch.get_default_dtype()",
    "torch.are_deterministic_algorithms_enabled()",
    "torch.backends.cudnn.deterministic",
    "torch.backends.cudnn.benchmark",
    "torch.backends.cuda.matmul.allow_fp16_reduced_precision_reduction",
    "torch.backends.cuda.matmul.allow_bf16_reduced_precision_reduction",
)


def changed(before: tuple[object, ...]) -> list[str]:
    """The names (NAMES, then GLOBAL_NAMES) whose value differs from `before`, each with both values where it is
    global state ("torch.get_num_threads() 8 -> 1")."""
    out = []
    for name, a, b in zip(NAMES + GLOBAL_NAMES, before, state()):
        if a != b:
            out.append(name if name in NAMES else f"{name} {a} -> {b}")
    return out
