"""Peak memory bandwidth and FLOP/s of a device, for roofline bounds.

Measured once per device (a large copy; a large matrix product) and cached on disk; datasheet figures
for known GPUs are kept beside the measurement so both can be shown.
"""

from __future__ import annotations

import json
import time
from dataclasses import asdict, dataclass

import torch

from kernelevolve.platforms.base import cache_dir

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
        return torch.cuda.get_device_name(device)
    import platform

    return platform.processor() or platform.machine()


def _timed(fn, device: torch.device, reps: int) -> float:
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
    sheet = next((v for k, v in DATASHEET.items() if k in name), None)
    return Peaks(name, bandwidth, fp32, half, sheet, torch.__version__)


def peaks(device: torch.device) -> Peaks:
    """Cached measurement for this device and torch version; measured on first use."""
    path = cache_dir() / "peaks.json"
    key = f"{device_name(device)}|{torch.__version__}"
    try:
        table = json.loads(path.read_text())
    except (OSError, ValueError):
        table = {}
    if key in table:
        data = table[key]
        data["datasheet"] = tuple(data["datasheet"]) if data.get("datasheet") else None
        return Peaks(**data)
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
