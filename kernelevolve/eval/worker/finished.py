"""Outputs finished when their call replied (the cpu target, the candidate in a process of its own).

The judge's clock brackets each call's request; the candidate's process controls when it replies, so it could reply
at once and do the work afterwards, before it reads the next request, where the work lands in another request's
bracket (an empty one, whose cost the judge takes at its least, or the reference's, whose time the speedup takes at
the lower of two processes'). So, right after each reply and before its next request, the judge reads a few
elements of the call's output at places only it chooses, straight from that process's memory
(`process_vm_readv`), where the reply says the output lies; when that output is taken (a correctness trial, a
sampled timed call, the last call on each timing set, the unseen-inputs check), it must hold what was read there.
Output not yet written when the call replied differs there. docs/harness.md, "Calls alike".
"""

from __future__ import annotations

import ctypes
import errno
import os
import random
from typing import Any

import torch

from kernelevolve.eval.worker import trees

SPOTS = 16  # elements read per output tensor: a call that left a share p of its output unwritten passes with p^16
MAX_LEAVES = 64  # tensors per output the judge reads (the rest are checked by their comparison alone)
_MAX_ELEMENTS = 1 << 48

# Memory of the judge's, made before the candidate's process is forked from it: that process holds the same bytes
# at the same address, which the judge reads to learn whether it can read that process at all (`Reader.probe`).
_PROBE = ctypes.create_string_buffer(b"kernelevolve: the judge reads the candidate's process here")


class _Iovec(ctypes.Structure):
    _fields_ = [("base", ctypes.c_void_p), ("len", ctypes.c_size_t)]


_libc = ctypes.CDLL(None, use_errno=True)
_read = getattr(_libc, "process_vm_readv", None)
if _read is not None:
    _read.restype = ctypes.c_ssize_t
    _read.argtypes = [
        ctypes.c_int,
        ctypes.POINTER(_Iovec),
        ctypes.c_ulong,
        ctypes.POINTER(_Iovec),
        ctypes.c_ulong,
        ctypes.c_ulong,
    ]


def where(out: Any) -> list[tuple[int, int, tuple[int, ...], tuple[int, ...]]]:
    """In the candidate's process: where each host tensor of an output lies (address of its first element, element
    size, shape, strides); (0, 0, (), ()) for a tensor on a device. Sent in every call's reply."""
    return [_place(t) for t in trees.tensors(out)]


def _place(t: torch.Tensor) -> tuple[int, int, tuple[int, ...], tuple[int, ...]]:
    try:
        if t.is_cpu and t.layout is torch.strided:
            return t.data_ptr(), t.element_size(), tuple(t.shape), tuple(t.stride())
    except RuntimeError:  # no storage to point at: the structure check says what it is
        pass
    return 0, 0, (), ()


def read(pid: int, places: list[tuple[int, int]]) -> bytes:
    """The bytes at (address, length) places in process `pid`'s memory, in one system call; raises OSError."""
    if _read is None:
        raise OSError(errno.ENOSYS, "process_vm_readv is not in this C library")
    total = sum(n for _, n in places)
    local = ctypes.create_string_buffer(max(total, 1))
    liov = _Iovec(ctypes.cast(local, ctypes.c_void_p), total)
    riov = (_Iovec * len(places))(*[_Iovec(addr, n) for addr, n in places])
    got = _read(pid, ctypes.byref(liov), 1, riov, len(places), 0)
    if got < 0:
        err = ctypes.get_errno()
        raise OSError(err, os.strerror(err))
    if got != total:
        raise OSError(errno.EFAULT, f"read {got} of {total} bytes")
    return local.raw[:total]


def _valid(found: Any) -> bool:
    """A reply's `where` as this module sends it (the candidate's process writes it: anything may come)."""
    if not isinstance(found, list) or len(found) > 1 << 16:
        return False
    for leaf in found:
        if not (isinstance(leaf, tuple) and len(leaf) == 4):
            return False
        addr, size, shape, strides = leaf
        if not all(isinstance(v, int) and v >= 0 for v in (addr, size)) or size > 64:
            return False
        if not (isinstance(shape, tuple) and isinstance(strides, tuple) and len(shape) == len(strides) <= 64):
            return False
        if not all(isinstance(v, int) and 0 <= v < _MAX_ELEMENTS for v in shape + strides):
            return False
    return True


class Reader:
    """The judge's reads of one candidate process's outputs: per input set, the elements read after the last call
    on it replied, till its output is taken."""

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.works = False
        self.why_not = "not probed"
        # The places: drawn from a seed made here, in the judge, after that process was forked from it (it cannot
        # read the judge's memory).
        self.pick = random.Random(os.urandom(16))
        # set key -> per tensor: (flat index, bytes) read, or None where the reply gave no place for it
        self.spots: dict[int, list[list[tuple[int, bytes]] | None]] = {}

    def probe(self) -> str:
        """'' where the judge can read that process's memory (before any candidate code runs there), else why not:
        the check is then off, and the result says so."""
        try:
            ok = read(self.pid, [(ctypes.addressof(_PROBE), len(_PROBE.raw))]) == _PROBE.raw
            self.why_not = "" if ok else "the judge read other bytes than it left there"
        except OSError as e:
            self.why_not = f"process_vm_readv: {e.strerror or e}"
        self.works = not self.why_not
        return self.why_not

    def after_reply(self, key: int, found: Any) -> str:
        """Reads SPOTS elements of each tensor the reply of the call on set `key` says it returned, at places drawn
        here; '' or why the reply cannot be so (the candidate's doing)."""
        self.spots.pop(key, None)
        if not self.works:
            return ""
        if not _valid(found):
            return "its reply says no output's place"
        pick = self.pick
        places: list[tuple[int, int]] = []
        chosen: list[list[int] | None] = []
        for addr, size, shape, strides in found[:MAX_LEAVES]:
            numel = 1
            for n in shape:
                numel *= n
            idx = [pick.randrange(numel) for _ in range(SPOTS)] if numel else []
            chosen.append(idx if addr else None)
            places += [(addr + size * _offset(i, shape, strides), size) for i in idx] if addr else []
        rest: list[list[tuple[int, bytes]] | None] = [[] for _ in found[MAX_LEAVES:]]
        if not places:
            self.spots[key] = [None if idx is None else [] for idx in chosen] + rest
            return ""
        try:
            data = read(self.pid, places)
        except OSError as e:
            return f"its output is not where its reply says ({e.strerror or e})"
        at, spots = 0, []
        for (_, size, _, _), idx in zip(found[:MAX_LEAVES], chosen):
            if idx is None:
                spots.append(None)
                continue
            spots.append([(i, data[at + k * size : at + (k + 1) * size]) for k, i in enumerate(idx)])
            at += size * len(idx)
        self.spots[key] = spots + rest
        return ""

    def check(self, key: int, out: Any) -> str:
        """'' where the taken output of set `key` holds what was read after its call replied, else why not."""
        spots = self.spots.pop(key, None)
        if spots is None:
            return ""
        leaves = trees.tensors(out)
        if len(leaves) != len(spots):
            return "it returned other tensors than its reply said"
        for n, (t, read_) in enumerate(zip(leaves, spots)):
            if read_ is None and t.numel():
                return f"its reply gave no place for output {n}"
            if not read_:
                continue
            if not t.is_cpu or t.numel() <= max(i for i, _ in read_):
                return f"output {n} is not shaped as its reply said"
            flat = t.detach().reshape(-1)
            index = torch.tensor([i for i, _ in read_])
            now = flat[index].contiguous().view(torch.uint8).numpy().tobytes()
            if now != b"".join(b for _, b in read_):
                return f"output {n} was not finished when its call replied"
        return ""

    def forget(self, keys: list[int]) -> None:
        for k in keys:
            self.spots.pop(k, None)


def _offset(flat: int, shape: tuple[int, ...], strides: tuple[int, ...]) -> int:
    """The element offset of the `flat`-th element (row-major) of a tensor of `shape` and `strides`."""
    off = 0
    for n, s in zip(reversed(shape), reversed(strides)):
        flat, i = divmod(flat, n)
        off += i * s
    return off
