"""Correctness samples from torch's OpInfo database: each OpInfo's float32 sample inputs run on the CPU under the
recording mode, forward and (where the OpInfo supports autograd) backward; every ATen call they make is a sample
of that operator, its arguments as spec.py writes them (integer contents kept exactly). docs/aten.md, "Samples".

Only OpInfos whose name relates to an operator asked for are run (`candidates`), so that generating a handful of
operators takes seconds, not the minutes of the whole database.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import os
import random
import zlib
from collections.abc import Iterable, Iterator
from typing import Any

import torch

from kernelevolve.aten.select import functional_name
from kernelevolve.aten.spec import tensors_in
from kernelevolve.aten.trace import RecordingMode

SAMPLES_PER_OPINFO = 48  # reference inputs run per OpInfo
SAMPLES_PER_OPERATOR = 24  # distinct calls kept per operator
NONCONTIGUOUS = 4  # samples also run in non-contiguous layouts (OpInfo's SampleInput.noncontiguous)
HALF = (torch.bfloat16, torch.float16)  # the half-precision dtypes whose samples are GPU check cases

# ATen operator stems the OpInfo names do not say (the OpInfo whose samples reach them).
ALIASES = {
    "convolution": ("nn.functional.conv1d", "nn.functional.conv2d"),
    "convolution_backward": ("nn.functional.conv1d", "nn.functional.conv2d"),
    "_native_batch_norm_legit_no_training": ("nn.functional.batch_norm",),
    "_native_batch_norm_legit": ("nn.functional.batch_norm",),
    "_native_batch_norm_legit_functional": ("nn.functional.batch_norm",),
    "embedding_dense_backward": ("nn.functional.embedding",),
    "mm": ("mm", "matmul", "nn.functional.linear"),
    "bmm": ("bmm", "matmul", "baddbmm"),
    "addmm": ("addmm", "nn.functional.linear"),
    "linear": ("nn.functional.linear",),
    "_log_softmax": ("log_softmax",),
    "_softmax": ("softmax",),
    "_unsafe_index": ("index_select",),
    "index": ("__getitem__",),
    "mean": ("mean", "nn.functional.adaptive_avg_pool2d", "nn.functional.avg_pool2d"),
    "_adaptive_avg_pool2d": ("nn.functional.adaptive_avg_pool2d",),
    "_adaptive_avg_pool2d_backward": ("nn.functional.adaptive_avg_pool2d",),
    "_scaled_dot_product_flash_attention_for_cpu": ("nn.functional.scaled_dot_product_attention",),
    "rsub": ("rsub", "sub"),
    "upsample_bilinear2d": ("nn.functional.interpolate", "nn.functional.upsample_bilinear"),
    "upsample_bilinear2d_backward": ("nn.functional.interpolate", "nn.functional.upsample_bilinear"),
    "upsample_nearest2d": ("nn.functional.interpolate", "nn.functional.upsample_nearest"),
    "upsample_nearest2d_backward": ("nn.functional.interpolate", "nn.functional.upsample_nearest"),
    "upsample_bicubic2d": ("nn.functional.interpolate",),
    "reflection_pad1d_backward": ("nn.functional.pad",),
    "reflection_pad2d_backward": ("nn.functional.pad",),
    "im2col": ("nn.functional.unfold",),
    "col2im": ("nn.functional.unfold", "nn.functional.fold"),
    "_ctc_loss": ("nn.functional.ctc_loss",),
    "nll_loss2d_forward": ("nn.functional.nll_loss", "nn.functional.cross_entropy"),
    "nll_loss2d_backward": ("nn.functional.nll_loss", "nn.functional.cross_entropy"),
    "_prelu_kernel": ("nn.functional.prelu",),
    "_prelu_kernel_backward": ("nn.functional.prelu",),
    "log_sigmoid": ("nn.functional.logsigmoid",),
    "log_sigmoid_forward": ("nn.functional.logsigmoid",),
    "log_sigmoid_backward": ("nn.functional.logsigmoid",),
    "_upsample_bicubic2d_aa": ("nn.functional.interpolate",),
    "_euclidean_dist": ("cdist",),  # cdist with p=2 on the CPU
    "_upsample_bicubic2d_aa_backward": ("nn.functional.interpolate",),
    "clamp": ("clamp", "nn.functional.gaussian_nll_loss"),  # scalar bounds: clamp's own samples take tensors
    "clamp_min": ("clamp_min", "nn.functional.hinge_embedding_loss", "nn.functional.margin_ranking_loss"),
    "_ctc_loss_backward": ("nn.functional.ctc_loss",),
}


def stem(name: str) -> str:
    """A name reduced to what OpInfo and ATen names share: 'aten::_softmax_backward_data' and
    'nn.functional.softmax' both give 'softmax'."""
    if name.startswith("torch.ops."):  # an OpInfo of one ATen overload: 'torch.ops.aten._safe_softmax.default'
        name = name.split(".")[3]
    name = name.split("::")[-1].split(".")[0] if "::" in name else name.rsplit(".", 1)[-1]
    name = name.strip("_")
    for prefix in ("native_", "special_", "linalg_"):
        name = name.removeprefix(prefix)
    for suffix in ("_data", "_backward", "_with_indices", "_input", "_weight", "_forward", "_functional"):
        name = name.removesuffix(suffix)
    return name


def packet(operator: str) -> str:
    """'aten::add.Tensor' -> 'add'."""
    return operator.split("::", 1)[-1].rsplit(".", 1)[0]


def op_db() -> list[Any]:
    """torch's OpInfo database (needs the expecttest package); ImportError with the fix otherwise."""
    import torch.backends

    os.environ.setdefault("PYTORCH_TEST_WITH_SLOW", "0")
    frozen = torch.backends.flags_frozen()
    try:
        from torch.testing._internal.common_methods_invocations import op_db as db
    except ImportError as e:
        raise ImportError(f"OpInfo needs the expecttest package: pip install expecttest ({e})") from e
    finally:
        # torch's test utilities freeze the backends' flags when imported (disable_global_flags), for torch's own
        # test suite; this process (a generator, a test run) goes on setting them, so they are unfrozen again.
        if not frozen:
            torch.backends.flags_frozen.__globals__["__allow_nonbracketed_mutation_flag"] = True  # torch's own switch
    return list(db)


def candidates(operators: Iterable[str], db: list[Any]) -> dict[str, list[Any]]:
    """Per operator, the OpInfos whose samples may reach it (by stem, or the alias table)."""
    by_stem: dict[str, list[Any]] = {}
    by_name: dict[str, list[Any]] = {}
    for info in db:
        names = {info.name, getattr(info, "aten_name", None) or info.name}
        if getattr(info, "aten_backward_name", None):
            names.add(info.aten_backward_name)
        for n in names:
            by_stem.setdefault(stem(n), []).append(info)
        by_name.setdefault(info.name, []).append(info)
    out: dict[str, list[Any]] = {}
    for op in operators:
        found = list(by_stem.get(stem(packet(op)), []))
        for alias in ALIASES.get(packet(op), ()):
            found += by_name.get(alias, [])
        out[op] = list({id(i): i for i in found}.values())
    return out


def _float_leaves(out: Any) -> list[torch.Tensor]:
    if isinstance(out, torch.Tensor):
        return [out] if out.is_floating_point() and out.requires_grad else []
    if isinstance(out, (list, tuple)):
        return [t for o in out for t in _float_leaves(o)]
    return []


def _run_sample(info: Any, sample: Any, mode: RecordingMode) -> None:
    """One sample, forward then backward (a random gradient of each output), under the mode; a sample that
    fails is skipped (OpInfo marks some as expected failures per device and dtype)."""
    try:
        with mode:
            out = info.op(sample.input, *sample.args, **sample.kwargs)
            outputs = _float_leaves(out)
            if outputs:
                torch.autograd.backward(outputs, [torch.randn_like(o) for o in outputs])
    except Exception:  # noqa: BLE001 - OpInfo samples include ones the CPU does not support
        return


def _samples(info: Any) -> list[Any]:
    """The OpInfo's reference inputs (its sample inputs and more: scalars, broadcasting, extremal shapes) in
    float32, or in the first integer or boolean dtype it supports where it has no float32 (bitwise operators);
    with requires_grad where it supports autograd."""
    supported = info.supported_dtypes("cpu")
    dtype = next((d for d in (torch.float32, torch.int64, torch.bool, torch.int32) if d in supported), None)
    if dtype is None:
        return []
    grad = bool(info.supports_autograd) and dtype.is_floating_point
    kept: list[Any] = []
    try:  # a sample function that fails part-way (an integer sample asked for a gradient) keeps what it made
        for sample in itertools.islice(info.reference_inputs("cpu", dtype, requires_grad=grad), SAMPLES_PER_OPINFO):
            kept.append(sample)
    except Exception:  # noqa: BLE001 - a sample function that cannot run here
        pass
    return kept


@contextlib.contextmanager
def seeded(info: Any) -> Iterator[None]:
    """torch's and Python's random generators seeded from the OpInfo's name for what runs inside, and restored
    after: its samples (shapes and values) and the gradients drawn for them are the same in every run, whatever
    ran before (docs/aten.md, "Selection")."""
    seed = zlib.crc32(f"{info.name}.{getattr(info, 'variant_test_name', '')}".encode())
    state = random.getstate()
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        random.seed(seed)
        try:
            yield
        finally:
            random.setstate(state)


def _record(info: Any) -> RecordingMode:
    """Every ATen call the OpInfo's samples make, forward and backward, then the first few again laid out
    non-contiguously."""
    mode = RecordingMode(keep_values=True)
    with seeded(info):
        samples = _samples(info)
        for sample in samples:
            _run_sample(info, sample, mode)
        for sample in samples[:NONCONTIGUOUS]:  # the same values in non-contiguous layouts
            try:
                sample = sample.noncontiguous()
            except Exception:  # noqa: BLE001 - a sample with arguments that have no such layout
                continue
            _run_sample(info, sample, mode)
    return mode


def samples_for(operators: Iterable[str], db: list[Any] | None = None) -> dict[str, dict[str, Any]]:
    """{operator: {"opinfos": [names], "calls": [call specs]}} for each operator some OpInfo sample reaches.
    The OpInfos run in the database's order, each seeded from its name, so that the calls (and their order) are
    the same in every run."""
    wanted = set(operators)
    db = op_db() if db is None else db
    chosen = candidates(sorted(wanted), db)
    position = {id(info): k for k, info in enumerate(db)}
    found_infos = {id(i): i for found in chosen.values() for i in found}
    infos = sorted(found_infos.values(), key=lambda i: position.get(id(i), len(db)))
    calls: dict[str, dict[str, None]] = {}
    sources: dict[str, set[str]] = {}
    half: dict[str, set[torch.dtype]] = {}
    for info in infos:
        mode = _record(info)
        for recorded, signatures in mode.recording.signatures.items():
            name = functional_name(recorded)  # an in-place or out= call is a sample of its functional form
            if name in wanted:
                for signature in signatures:
                    calls.setdefault(name, {})[signature] = None
                sources.setdefault(name, set()).add(info.name)
                half.setdefault(name, set()).update(gpu_half_dtypes(info))
    return {
        op: {
            "opinfos": sorted(sources[op]),
            "calls": pick(list(found)),
            "half": [d for d in HALF if d in half[op]],
        }
        for op, found in calls.items()
    }


def gpu_half_dtypes(info: Any) -> set[torch.dtype]:
    """The half-precision dtypes the OpInfo declares its operator supports on CUDA (read from the database, no
    GPU needed)."""
    try:
        return set(HALF) & set(info.supported_dtypes("cuda"))
    except Exception:  # noqa: BLE001 - an OpInfo without a CUDA entry
        return set()


def pick(signatures: list[str]) -> list[dict[str, Any]]:
    """At most SAMPLES_PER_OPERATOR calls without complex tensors: the edge cases (non-contiguous layouts, empty
    tensors) up to half of them, the rest in OpInfo's order."""
    calls = [json.loads(s) for s in signatures]
    calls = [c for c in calls if not any("complex" in t["dtype"] for t in tensors_in(c))]  # float problems only

    def edge(call: dict[str, Any]) -> bool:
        return any("stride" in t or "offset" in t or 0 in t["t"] for t in tensors_in(call))

    edges = [c for c in calls if edge(c)][: SAMPLES_PER_OPERATOR // 2]
    rest = [c for c in calls if not edge(c)]
    return (edges + rest)[:SAMPLES_PER_OPERATOR]
