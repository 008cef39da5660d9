"""Poisoned memory for correctness trials: what the candidate allocates starts as garbage, never as a result the
reference just freed, so an output left (partly) unwritten (`torch.empty_like` returned as is) fails the
comparison instead of passing on stale memory.

cpu (glibc): malloc's perturb option, switched on only around candidate calls, fills every fresh allocation
with POISON_BYTE; elsewhere blocks of the output sizes are filled and freed. cuda: every free block the caching
allocator holds is filled (allocated in the output sizes until the cache is used up, filled, freed), since a
freed block keeps its contents and is handed to the next allocation of its size.
"""

from __future__ import annotations

import ctypes
from typing import Any

import torch

from kernelevolve.eval.worker import trees
from kernelevolve.platforms import for_device

# float32 3.39e38, float16 NaN, bfloat16 3.39e38, int32 2139062143: no plausible result looks like it.
POISON_BYTE = 0x7F
_M_PERTURB = -6  # glibc mallopt: freed memory is set to the byte, fresh allocations to its complement
_MAX_BLOCKS = 256  # cuda: blocks poisoned per size, a bound for caches of many small blocks


def _libc_mallopt() -> Any:
    try:
        return ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):
        return None


_MALLOPT = _libc_mallopt()


def output_sizes(out: Any) -> list[int]:
    """Bytes of each tensor leaf: the sizes a candidate allocates its outputs in."""
    return sorted({x.numel() * x.element_size() for x in trees.tensors(out) if x.numel()})


class Poisoned:
    """Context manager around a candidate call: memory it allocates holds POISON_BYTE until written."""

    def __init__(self, device: torch.device, sizes: list[int]):
        self.device = device
        self.sizes = sizes
        self._perturbing = False

    def __enter__(self) -> Poisoned:
        if for_device(self.device).separate_device():
            _fill_cuda_cache(self.device, self.sizes)
        else:
            self._perturbing = _MALLOPT is not None and _MALLOPT(_M_PERTURB, POISON_BYTE ^ 0xFF) == 1
            if not self._perturbing:
                _fill_and_free(self.sizes, copies=3)
        return self

    def __exit__(self, *exc: object) -> None:
        if self._perturbing:
            _MALLOPT(_M_PERTURB, 0)


def _fill_and_free(sizes: list[int], copies: int, device: torch.device | None = None) -> None:
    held = [torch.empty(n, dtype=torch.uint8, device=device).fill_(POISON_BYTE) for n in sizes for _ in range(copies)]
    del held


def _fill_cuda_cache(device: torch.device, sizes: list[int]) -> None:
    """Fill every cached free block: allocating in the output's size until the cache is exhausted hands out
    (and splits) the free blocks that size could be served from. Only cached memory is filled: an allocation the
    cache could not serve (the device's reserve grew) is the size's last, so poisoning takes at most one block
    beyond the cache, never device memory the candidate would need."""
    for n in sizes:
        reserved, allocated = for_device(device).cached_bytes(device)
        free = reserved - allocated
        held, total = [], 0
        while total <= free and len(held) < _MAX_BLOCKS:
            reserved = for_device(device).cached_bytes(device)[0]
            try:
                block = torch.empty(n, dtype=torch.uint8, device=device)
            except torch.OutOfMemoryError:
                break
            if for_device(device).cached_bytes(device)[0] > reserved:  # not from the cache: poisoned too, then stop
                block.fill_(POISON_BYTE)
                break
            held.append(block.fill_(POISON_BYTE))
            total += n
        del held


_SAME_SIZE_INT = {1: torch.uint8, 2: torch.int16, 4: torch.int32, 8: torch.int64}


def poisoned_elements(t: torch.Tensor) -> int:
    """How many elements of an output still hold the poison pattern in every byte (never written)."""
    if not isinstance(t, torch.Tensor) or t.numel() == 0 or t.is_complex() or t.dtype == torch.bool:
        return 0
    as_int = _SAME_SIZE_INT.get(t.element_size())
    if as_int is None:
        return 0
    pattern = int.from_bytes(bytes([POISON_BYTE]) * t.element_size(), "little", signed=as_int != torch.uint8)
    return int((t.detach().contiguous().view(as_int) == pattern).sum())
