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


def state() -> tuple[object, ...]:
    return (
        torch.backends.cuda.matmul.allow_tf32,
        torch.backends.cudnn.allow_tf32,
        torch.get_float32_matmul_precision(),
        os.environ.get(TRITON_F32_DEFAULT),
    )


NAMES = (
    "torch.backends.cuda.matmul.allow_tf32",
    "torch.backends.cudnn.allow_tf32",
    "torch.float32_matmul_precision",
    f"os.environ[{TRITON_F32_DEFAULT}]",
)


def changed(before: tuple[object, ...]) -> list[str]:
    return [name for name, a, b in zip(NAMES, before, state()) if a != b]
