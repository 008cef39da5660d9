"""The float32 precision policy of an evaluation, set before the problem runs and held until the verdict.

TF32 inside a float32 problem is the run's choice (`--allow-tf32`), never a kernel's: by default cuBLAS and
cuDNN compute float32 in float32 (cuDNN's own default is TF32) and a Triton `tl.dot` without an explicit
`input_precision` is IEEE float32, so the reference, the baseline and a candidate that states nothing all
compute faithfully. A candidate that changes the policy is rejected (harness._tampered).

The rest of torch's process-wide state (threads, default dtype, deterministic and reduced-precision flags,
flush-denormal) is pinned once the trusted phase is over (`pin`) and set back after every candidate call
(`reset`), so a reference call never runs in a state the candidate left; what `reset` found changed is kept and
rejects the candidate (docs/harness.md, "Checks").
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


_TINY, _ONE = 1e-310, 1.0  # a denormal double, and a factor the compiler cannot fold it with


def _flush_denormal() -> bool:
    """Whether this thread flushes denormal floats to zero (torch.set_flush_denormal has no getter): the floating
    point control register it sets governs Python's own float arithmetic on this thread too."""
    return _TINY * _ONE == 0.0


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
        torch.is_deterministic_algorithms_warn_only_enabled(),
        _flush_denormal(),
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
    "torch.is_deterministic_algorithms_warn_only_enabled()",
    "torch.set_flush_denormal",
)


def changed(before: tuple[object, ...]) -> list[str]:
    """The names (NAMES, then GLOBAL_NAMES) whose value differs from `before`, each with both values where it is
    global state ("torch.get_num_threads() 8 -> 1"), and what `reset` found changed and set back."""
    out = []
    for name, a, b in zip(NAMES + GLOBAL_NAMES, before, state()):
        if a != b:
            out.append(name if name in NAMES else f"{name} {a} -> {b}")
    return out + [d for d in _drifted if d not in out]


# Mutated in place, never re-bound: the integrity check fingerprints this module's names (eval/worker/integrity.py).
_pinned: list[tuple[object, ...]] = []  # the state `pin` took, once taken
_drifted: list[str] = []  # what `reset` set back: `changed` still reports it


def pin() -> tuple[object, ...]:
    """The state every reference call runs in from now on (`reset`): taken once the trusted phase is over, before
    the candidate loads; returned for `changed`."""
    _pinned[:] = [state()]
    _drifted.clear()
    return _pinned[0]


def reset() -> list[str]:
    """Set what a candidate changed of the pinned state back (nothing before `pin`) and remember it for `changed`;
    returns it. Cheap where nothing changed: only the getters run."""
    if not _pinned:
        return []
    found = [d for d in changed(_pinned[0]) if d not in _drifted]
    if found:
        _restore(_pinned[0])
        _drifted.extend(found)
    return found


def _restore(saved: tuple[object, ...]) -> None:
    tf32, cudnn_tf32, matmul_precision, triton_default, threads, interop, dtype, det, cudnn_det, bench, fp16, bf16 = (
        saved[:12]
    )
    warn_only, flush = saved[12:14]
    torch.backends.cuda.matmul.allow_tf32 = tf32
    torch.backends.cudnn.allow_tf32 = cudnn_tf32
    torch.set_float32_matmul_precision(str(matmul_precision))
    if triton_default is None:
        os.environ.pop(TRITON_F32_DEFAULT, None)
    else:
        os.environ[TRITON_F32_DEFAULT] = str(triton_default)
    if torch.get_num_threads() != threads:
        torch.set_num_threads(int(threads))
    if torch.get_num_interop_threads() != interop:
        try:
            torch.set_num_interop_threads(int(interop))
        except RuntimeError:  # settable once, before any inter-op work: the check still reports it
            pass
    torch.set_default_dtype(dtype)
    torch.use_deterministic_algorithms(bool(det), warn_only=bool(warn_only))
    torch.backends.cudnn.deterministic, torch.backends.cudnn.benchmark = cudnn_det, bench
    torch.backends.cuda.matmul.allow_fp16_reduced_precision_reduction = fp16
    torch.backends.cuda.matmul.allow_bf16_reduced_precision_reduction = bf16
    torch.set_flush_denormal(bool(flush))
