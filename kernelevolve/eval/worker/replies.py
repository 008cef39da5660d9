"""What the judge accepts from the candidate's process: replies unpickled by an unpickler that builds only the
harness's own reply types. The candidate's code runs in that process and can write anything to its end of the
pipe; a plain `pickle.loads` of it would call whatever the bytes name (`exec` among them) inside the judge.

A reply is built from Python's plain values (tuples, lists, dicts, strings, numbers, bytes, None), torch's dtypes,
sizes and devices, the harness's shared-tensor descriptions and timing figures, and, on a GPU, tensors rebuilt
from CUDA IPC handles by torch's own reduction (a plain tensor class over a typed storage, nothing else).
"""

from __future__ import annotations

import io
import pickle
from typing import Any

import torch

ALLOWED = {
    ("kernelevolve.eval.worker.shared", "Leaf"),
    ("kernelevolve.eval.worker.timing", "TimingStats"),
    ("kernelevolve.eval.worker.series", "Series"),
    ("torch", "Size"),
    ("torch", "device"),
    ("torch", "Tensor"),
    ("torch.storage", "TypedStorage"),
    ("torch.multiprocessing.reductions", "rebuild_cuda_tensor"),
}


class Refused(Exception):
    """A reply that names something the judge does not build."""


class _Unpickler(pickle.Unpickler):
    def find_class(self, module: str, name: str) -> Any:
        if (module, name) in ALLOWED:
            return super().find_class(module, name)
        if module == "torch" and isinstance(getattr(torch, name, None), torch.dtype):
            return getattr(torch, name)
        raise Refused(f"{module}.{name}")

    def persistent_load(self, pid: Any) -> Any:
        raise Refused("a persistent id")


def loads(data: bytes) -> Any:
    """The reply in `data`; raises Refused for anything beyond the reply types (and pickle's own errors for
    bytes that are no pickle)."""
    return _Unpickler(io.BytesIO(data)).load()
