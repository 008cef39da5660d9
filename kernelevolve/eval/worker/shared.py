"""Tensors the judge and the candidate's process both map. On the host each tensor leaf lives in a file of its own
(a file-backed shared storage), so handing a tree over sends names and layouts, never bytes; the folder is the
worker's private /dev/shm (or its TMPDIR), which the sandbox removes with the worker. On a GPU a leaf is copied
into a memory pool of its own (`torch.cuda.MemPool`) and crosses the pipe as a CUDA IPC handle (torch's
reductions): a handle opens the whole allocation segment its tensor lies in, and a pool's segments hold only what
the judge shares, never a reference output or a held-back input.
"""

from __future__ import annotations

import os
import tempfile
from dataclasses import dataclass
from typing import Any

import torch
from torch.utils._pytree import tree_map

from kernelevolve.eval.worker import trees
from kernelevolve.platforms import for_device


@dataclass(frozen=True)
class Leaf:
    """Where a shared tensor's bytes are and how to read them."""

    path: str
    dtype: torch.dtype
    shape: tuple[int, ...]
    stride: tuple[int, ...]
    nbytes: int

    def __reduce__(self) -> tuple[Any, tuple[Any, ...]]:
        # Plain arguments: pickle's default path would cache __slotnames__ on the class, which the integrity
        # check's fingerprint of the harness's classes reads as a re-binding.
        return (Leaf, (self.path, self.dtype, self.shape, self.stride, self.nbytes))


def folder() -> str:
    """A fresh folder for one job's shared tensors."""
    base = "/dev/shm" if os.access("/dev/shm", os.W_OK) else None
    return tempfile.mkdtemp(prefix="kernelevolve-shared-", dir=base)


def _extent(t: torch.Tensor) -> int:
    """Elements from the first to one past the last that t's strides reach."""
    if t.numel() == 0:
        return 0
    return 1 + sum((n - 1) * s for n, s in zip(t.shape, t.stride()))


def _open(leaf: Leaf) -> torch.Tensor:
    storage = torch.UntypedStorage.from_file(leaf.path, shared=True, nbytes=leaf.nbytes)
    return torch.empty(0, dtype=leaf.dtype).set_(storage, 0, leaf.shape, leaf.stride)


def _stride(t: torch.Tensor) -> tuple[int, ...]:
    """t's strides, or contiguous ones where t overlaps itself or runs backwards (a copy cannot keep those)."""
    overlapping = any(s == 0 and n > 1 for n, s in zip(t.shape, t.stride()))
    return t.contiguous().stride() if overlapping or t.stride() and min(t.stride()) < 0 else t.stride()


def _share_one(t: torch.Tensor, where: str) -> tuple[torch.Tensor, Leaf]:
    t = t.detach()
    stride = _stride(t)
    probe = torch.empty_strided(t.shape, stride, dtype=t.dtype, device="meta")
    nbytes = max(_extent(probe) * t.element_size(), 1)
    fd, path = tempfile.mkstemp(dir=where, prefix="t-")
    try:
        os.ftruncate(fd, nbytes)
    finally:
        os.close(fd)
    leaf = Leaf(path, t.dtype, tuple(t.shape), tuple(stride), nbytes)
    out = _open(leaf)
    out.copy_(t)
    return out, leaf


def share(tree: Any, where: str, pool: Any = None) -> tuple[Any, Any]:
    """(the tree with every tensor leaf copied into shared memory, the picklable spec of it: Leaf in place of each
    host tensor, the pool's copy itself for a device tensor, which the pipe's pickler sends as an IPC handle).
    pool: the `torch.cuda.MemPool` device leaves are copied into (required where there are any). Other leaves
    travel as they are."""
    leaves: dict[int, Leaf | torch.Tensor] = {}

    def one(t: torch.Tensor) -> torch.Tensor:
        if t.is_cpu:
            out, leaf = _share_one(t, where)
        elif pool is None:
            raise ValueError(f"a {t.device} tensor is shared only through a memory pool of its own")
        else:
            with for_device(t.device).use_memory_pool(pool):
                out = torch.empty_strided(t.shape, _stride(t), dtype=t.dtype, device=t.device).copy_(t)
            leaf = out
        leaves[id(out)] = leaf
        return out

    shared = trees.map_tensors(one, tree)
    spec = tree_map(lambda x: leaves[id(x)] if isinstance(x, torch.Tensor) else x, shared)
    return shared, spec


def send(tree: Any, where: str) -> Any:
    """The candidate's side: the spec of an output, host leaves in files of their own, device leaves as they are
    (the pipe's pickler sends a CUDA IPC handle; the judge clones the tensor at once)."""

    def one(t: torch.Tensor) -> Any:
        # A device tensor goes as a copy of its own: one received from the judge (an input returned, where the
        # reference returns one too) cannot be sent back by handle.
        return _share_one(t, where)[1] if t.is_cpu else t.detach().clone()

    return trees.map_tensors(one, tree)


def open_spec(spec: Any) -> Any:
    """The tree a spec describes, its host tensors mapping the shared files (device tensors came as they are)."""
    return tree_map(lambda x: _open(x) if isinstance(x, Leaf) else x, spec, is_leaf=lambda x: isinstance(x, Leaf))


def release(spec: Any) -> None:
    """Removes the files of a spec (the mappings stay valid where they are held)."""
    for leaf in _leaves(spec):
        try:
            os.unlink(leaf.path)
        except OSError:
            pass


def outside(spec: Any, where: str) -> str:
    """The first path of a spec's leaves that is not a file this module made in `where` ('' if none)."""
    for leaf in _leaves(spec):
        path = leaf.path if isinstance(leaf.path, str) else repr(leaf.path)
        if os.path.dirname(path) != where or not os.path.basename(path).startswith("t-") or "\0" in path:
            return path
    return ""


def _leaves(spec: Any) -> list[Leaf]:
    found: list[Leaf] = []
    tree_map(lambda x: found.append(x) if isinstance(x, Leaf) else None, spec, is_leaf=lambda x: isinstance(x, Leaf))
    return found
