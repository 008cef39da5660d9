"""Peak memory bandwidth and FLOP/s of a device, for roofline bounds.

Measured once per device (a large copy; a large matrix product) and cached on disk; datasheet figures
for known GPUs are kept beside the measurement so both can be shown. Measuring needs torch (the worker);
reading the cache does not (`cached`: the parent's prompts state the measured figures).
"""

from __future__ import annotations

import json
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kernelevolve.platforms.base import cache_dir

if TYPE_CHECKING:
    import torch

# Vendor datasheets, dense: (memory GB/s, fp32 TFLOP/s non-tensor, bf16/fp16 tensor TFLOP/s).
DATASHEET: dict[str, tuple[float, float, float]] = {
    "H200": (4800.0, 67.0, 989.0),  # NVIDIA H200 SXM datasheet
    "H100 80GB HBM3": (3350.0, 67.0, 989.0),  # NVIDIA H100 SXM datasheet
    "H100 PCIe": (2000.0, 51.0, 756.0),  # NVIDIA H100 PCIe datasheet
    "A100-SXM4-80GB": (2039.0, 19.5, 312.0),  # NVIDIA A100 datasheet
    "A100-SXM4-40GB": (1555.0, 19.5, 312.0),  # NVIDIA A100 datasheet
    "MI300X": (5300.0, 163.4, 1307.4),  # AMD Instinct MI300X datasheet
}


@dataclass
class Peaks:
    device: str
    bandwidth_gbs: float  # measured copy bandwidth, bytes read + written
    fp32_tflops: float  # measured fp32 matrix product
    half_tflops: float | None  # measured bf16 matrix product (GPU only)
    datasheet: tuple[float, float, float] | None
    torch_version: str


def device_name(device: torch.device) -> str:
    if device.type == "cuda":
        import torch

        return torch.cuda.get_device_name(device)
    return host_name()


def host_name() -> str:
    """The cpu's key in the cache (what `device_name` gives for a cpu device)."""
    import platform

    return platform.processor() or platform.machine()


def datasheet(name: str) -> tuple[float, float, float] | None:
    return next((v for k, v in DATASHEET.items() if k in name), None)


def _timed(fn, device: torch.device, reps: int) -> float:
    import torch

    fn()
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    t0 = time.perf_counter()
    for _ in range(reps):
        fn()
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    return (time.perf_counter() - t0) / reps


def measure(device: torch.device) -> Peaks:
    import torch

    gpu = device.type == "cuda"
    n = (1 << 30 if gpu else 1 << 26) // 4  # 1 GiB on a GPU, 64 MiB on a CPU
    src = torch.empty(n, dtype=torch.float32, device=device).uniform_()
    dst = torch.empty_like(src)
    t = _timed(lambda: dst.copy_(src), device, 20 if gpu else 5)
    bandwidth = 2 * src.numel() * 4 / t / 1e9
    size = 8192 if gpu else 1024
    a = torch.randn(size, size, device=device)
    b = torch.randn(size, size, device=device)
    prev = torch.backends.cuda.matmul.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = False
    try:
        fp32 = 2 * size**3 / _timed(lambda: a @ b, device, 10 if gpu else 3) / 1e12
    finally:
        torch.backends.cuda.matmul.allow_tf32 = prev
    half = None
    if gpu:
        ah, bh = a.bfloat16(), b.bfloat16()
        half = 2 * size**3 / _timed(lambda: ah @ bh, device, 20) / 1e12
    name = device_name(device)
    return Peaks(name, bandwidth, fp32, half, datasheet(name), torch.__version__)


def peaks_dir() -> Path:
    """The one cache folder a worker writes (it measures the device once and records it here)."""
    return cache_dir() / "peaks"


def _path() -> Path:
    return peaks_dir() / "peaks.json"


def _table(path: Path) -> dict[str, Any]:
    try:
        table = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    return table if isinstance(table, dict) else {}


def _peaks_of(data: dict[str, Any]) -> Peaks:
    data = dict(data)
    data["datasheet"] = tuple(data["datasheet"]) if data.get("datasheet") else None
    return Peaks(**data)


def public_version(version: str) -> str:
    """'2.11.0+cu130' (torch.__version__) and '2.11.0' (the package's version) name one torch release."""
    return version.split("+")[0]


def cached(name: str, torch_version: str) -> Peaks | None:
    """The cached measurement of the device called `name` under this torch, or None; never measures, never
    imports torch."""
    table = _table(_path())
    data = table.get(f"{name}|{torch_version}")
    if data is None:  # keyed by torch.__version__, asked perhaps by the package's version: one release
        for key, value in table.items():
            device, _, version = key.rpartition("|")
            if device == name and public_version(version) == public_version(torch_version):
                data = value
                break
    try:
        return _peaks_of(data) if isinstance(data, dict) else None
    except TypeError:  # a table written by another version of this module
        return None


def peaks(device: torch.device) -> Peaks:
    """Cached measurement for this device and torch version; measured on first use."""
    import torch

    path = _path()
    key = f"{device_name(device)}|{torch.__version__}"
    table = _table(path)
    if key in table:
        return _peaks_of(table[key])
    result = measure(device)
    table[key] = asdict(result)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps(table, indent=1))
        tmp.replace(path)
    except OSError:
        pass  # a read-only or full cache only costs a re-measurement next time
    return result
