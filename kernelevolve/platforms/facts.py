"""What a prompt says about the target: the device, its limits and peaks, and the software that builds kernels.

A model writing a kernel needs the chip it runs on (SMs and shared memory, or cores, ISA and caches), how fast
its memory and arithmetic are, and which torch, Triton, CUDA and compiler build the kernel. `device_facts`
gathers them on the machine the run evaluates on, once per process. The parent never imports torch: on a GPU
target a child process reads `torch.cuda.get_device_properties`; on the cpu, /proc/cpuinfo and sysfs are read
directly; measured peaks come from the cache `platforms/peaks.py` keeps. Whatever cannot be read is left out:
gathering never fails a prompt. Facts are plain data (`to_dict` / `from_dict`), so tests build prompts from
the recorded facts of a GPU this machine does not have.
"""

from __future__ import annotations

import ast
import functools
import importlib.metadata
import importlib.util
import json
import os
import platform as pyplatform
import re
import shutil
import subprocess
import sys
import threading
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any

from kernelevolve.platforms import device_present, get_platform
from kernelevolve.platforms.peaks import cached, datasheet, host_name
from kernelevolve.problem.problem import parse

# ISA extensions a CPU kernel can use (the /proc/cpuinfo spelling), in the order a prompt lists them.
KERNEL_FLAGS = (
    "sse4_2 avx avx2 fma f16c avx_vnni avx512f avx512dq avx512cd avx512bw avx512vl avx512_vnni avx512_bf16 "
    "avx512_fp16 amx_tile amx_bf16 amx_int8 asimd asimdhp sve sve2 bf16 i8mm"
).split()
# Vector FLOPs per cycle per core in fp32 (two FMA pipes), for a peak estimate where none was measured.
FP32_FLOPS_PER_CYCLE = (("avx512f", 64), ("avx2", 32), ("avx", 16), ("asimd", 16))
# Per-core streaming bandwidth assumed where none was measured: low for a server core, so a kernel is not told
# it is far from a roofline it may have reached.
ASSUMED_GBS_PER_CORE = 10.0
PROBE_TIMEOUT_S = 120.0
GIB = 2**30
KIB = 2**10

# Run in a child process on GPU targets: the properties torch reports for device 0, as JSON.
GPU_PROBE = """
import json, torch
p = torch.cuda.get_device_properties(0)
out = {"name": p.name, "capability": f"{p.major}.{p.minor}", "sm_count": p.multi_processor_count,
       "memory_bytes": p.total_memory, "cuda": torch.version.cuda or "", "hip": torch.version.hip or ""}
for key, attr in (("l2_bytes", "L2_cache_size"), ("shared_per_sm", "shared_memory_per_multiprocessor"),
                  ("shared_per_block_optin", "shared_memory_per_block_optin"),
                  ("shared_per_block", "shared_memory_per_block"), ("registers_per_sm", "regs_per_multiprocessor"),
                  ("warp_size", "warp_size"), ("arch_name", "gcnArchName")):
    value = getattr(p, attr, None)
    if key == "arch_name" and not torch.version.hip:  # CUDA builds report the model's name there
        continue
    if isinstance(value, (int, str)) and value:
        out[key] = value
print(json.dumps(out))
"""


@dataclass
class DeviceFacts:
    """The target as a prompt states it; every field may be missing (None, "" or empty)."""

    target: str  # the platform: cpu | cuda | rocm
    name: str = ""  # "NVIDIA H200", "AMD EPYC 9654 96-Core Processor"
    machine: str = ""  # x86_64, aarch64
    # GPU targets
    capability: str = ""  # "9.0"
    arch_name: str = ""  # ROCm's gfx name
    sm_count: int | None = None
    warp_size: int | None = None
    shared_per_sm: int | None = None  # bytes
    shared_per_block: int | None = None  # bytes, without opt-in
    shared_per_block_optin: int | None = None  # bytes, with cudaFuncAttributeMaxDynamicSharedMemorySize
    registers_per_sm: int | None = None
    l2_bytes: int | None = None
    memory_bytes: int | None = None  # device memory, or the host's RAM on the cpu
    # cpu target
    cores: int | None = None  # logical CPUs the worker may run on (its affinity)
    physical_cores: int | None = None
    threads: str = ""  # OMP_NUM_THREADS where the environment sets it
    isa: list[str] = field(default_factory=list)  # of KERNEL_FLAGS
    mhz: float | None = None
    l1d_bytes: int | None = None  # per core
    l2_cache_bytes: int | None = None  # per core (cpu)
    l3_bytes: int | None = None
    l3_shared_by: int | None = None  # logical CPUs sharing the L3
    # peaks: measured (the peaks cache), a datasheet's, or assumed; the source says which
    bandwidth_gbs: float | None = None
    bandwidth_source: str = ""  # measured | assumed
    fp32_tflops: float | None = None
    half_tflops: float | None = None  # bf16 tensor cores
    flops_source: str = ""  # measured | estimated
    datasheet: list[float] | None = None  # (GB/s, fp32 TFLOP/s, bf16/fp16 dense TFLOP/s)
    versions: dict[str, str] = field(default_factory=dict)  # torch, triton, cuda, hip, nvcc, cxx, python

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> DeviceFacts:
        known = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in data.items() if k in known})

    @property
    def arch(self) -> str | None:
        """The knowledge base's architecture word for this device (hopper, ampere, x86, ...), or None."""
        if self.target == "cpu":
            return "x86" if self.machine in ("x86_64", "AMD64", "i686") else None
        if self.target == "rocm":
            return "cdna3" if "gfx94" in self.arch_name or "MI300" in self.name else None
        major = self.capability.split(".")[0]
        return {"8": "ampere", "9": "hopper", "10": "blackwell", "12": "blackwell"}.get(major)

    def describe(self) -> list[str]:
        """The facts as prompt lines."""
        lines = _gpu_lines(self) if self.target != "cpu" else _cpu_lines(self)
        lines += _peak_lines(self)
        software = _software(self.versions)
        if software:
            lines.append(f"Software: {software}")
        return lines


def _size(n: int | None) -> str:
    if not n:
        return ""
    if n >= GIB:
        return f"{n / GIB:.1f} GiB"
    if n >= 2**20:
        return f"{n / 2**20:g} MiB"
    return f"{n / KIB:g} KiB"


def _gpu_lines(f: DeviceFacts) -> list[str]:
    if not f.name and not f.sm_count:
        return ["GPU: its properties could not be read where this prompt was built"]
    head = f"GPU: {f.name or 'unknown model'}"
    if f.capability:
        sm = f.capability.replace(".", "")
        head += f", compute capability {f.capability} (sm_{sm}" + (f", {f.arch}" if f.arch else "") + ")"
    if f.arch_name:
        head += f", {f.arch_name}"
    if f.sm_count:
        head += f", {f.sm_count} {'SMs' if f.target == 'cuda' else 'compute units'}"
    if f.warp_size:
        head += f", warp size {f.warp_size}"
    lines = [head]
    shared = []
    if f.shared_per_sm:
        shared.append(f"{_size(f.shared_per_sm)} per SM")
    if f.shared_per_block_optin:
        shared.append(f"{_size(f.shared_per_block_optin)} per block with opt-in")
    if f.shared_per_block:
        shared.append(f"{_size(f.shared_per_block)} per block without it")
    if shared:
        regs = f"; {f.registers_per_sm} 32-bit registers per SM" if f.registers_per_sm else ""
        lines.append("Shared memory: " + ", ".join(shared) + regs)
    memory = [f"L2 cache {_size(f.l2_bytes)}"] if f.l2_bytes else []
    memory += [f"device memory {_size(f.memory_bytes)}"] if f.memory_bytes else []
    if memory:
        lines.append("Memory: " + ", ".join(memory))
    return lines


def _cpu_lines(f: DeviceFacts) -> list[str]:
    head = f"CPU: {f.name or 'unknown model'}" + (f" ({f.machine})" if f.machine else "")
    if f.cores:
        head += f", {f.cores} logical CPUs available to the worker"
        if f.physical_cores and f.physical_cores != f.cores:
            head += f" ({f.physical_cores} physical cores)"
    if f.threads:
        head += f"; OMP_NUM_THREADS={f.threads} in the worker's environment"
    if f.mhz:
        head += f"; clock about {f.mhz / 1000:.2f} GHz"
    lines = [head]
    if f.isa:
        isa = "ISA extensions: " + " ".join(f.isa)
        if f.machine == "x86_64" and "avx512f" not in f.isa:
            isa += " (no AVX-512: do not use AVX-512 intrinsics)"
        lines.append(isa)
    caches = []
    if f.l1d_bytes:
        caches.append(f"L1d {_size(f.l1d_bytes)} per core")
    if f.l2_cache_bytes:
        caches.append(f"L2 {_size(f.l2_cache_bytes)} per core")
    if f.l3_bytes:
        shared = f" shared by {f.l3_shared_by} logical CPUs" if f.l3_shared_by and f.l3_shared_by > 1 else ""
        caches.append(f"L3 {_size(f.l3_bytes)}{shared}")
    if f.memory_bytes:
        caches.append(f"RAM {_size(f.memory_bytes)}")
    if caches:
        lines.append("Caches and memory: " + ", ".join(caches))
    return lines


def _peak_lines(f: DeviceFacts) -> list[str]:
    sheet = f.datasheet or []
    lines = []
    if f.bandwidth_gbs:
        how = {
            "measured": "measured by KernelEvolve on this machine (a device copy, bytes read + written)",
            "assumed": f"assumed, not measured ({ASSUMED_GBS_PER_CORE:g} GB/s per core)",
        }.get(f.bandwidth_source, f.bandwidth_source)
        text = f"Memory bandwidth: {f.bandwidth_gbs:,.0f} GB/s, {how}"
        if sheet:
            text += f"; datasheet {sheet[0]:,.0f} GB/s"
        lines.append(text)
    elif sheet:
        lines.append(f"Memory bandwidth: datasheet {sheet[0]:,.0f} GB/s (not measured here yet)")
    rates = []
    if f.fp32_tflops:
        rates.append(f"fp32 {_rate(f.fp32_tflops)}")
    if f.half_tflops:
        rates.append(f"bf16 tensor cores {_rate(f.half_tflops)}")
    if rates:
        how = {
            "measured": "measured matrix products (fp32 without TF32)",
            "estimated": "estimated from the ISA, clock and cores, not measured",
        }.get(f.flops_source, f.flops_source)
        text = f"Peak FLOP/s: {', '.join(rates)}, {how}"
        if sheet:
            text += f"; datasheet fp32 {sheet[1]:g} TFLOP/s (no tensor cores), bf16/fp16 dense {sheet[2]:g} TFLOP/s"
        lines.append(text)
    elif sheet:
        lines.append(f"Peak FLOP/s: datasheet fp32 {sheet[1]:g} TFLOP/s, bf16/fp16 dense {sheet[2]:g} TFLOP/s")
    return lines


def _rate(tflops: float) -> str:
    return f"{tflops:,.0f} TFLOP/s" if tflops >= 1 else f"{tflops * 1000:,.0f} GFLOP/s"


def _software(v: dict[str, str]) -> str:
    parts = [f"{k} {v[k]}" for k in ("torch", "triton") if v.get(k)]
    if v.get("cuda"):
        parts.append(f"CUDA {v['cuda']} (torch's build)")
    elif v.get("hip"):
        parts.append(f"HIP {v['hip']} (torch's build)")
    if v.get("nvcc"):
        parts.append(f"nvcc {v['nvcc']}")
    if v.get("cxx"):
        parts.append(f"C++ compiler `{v['cxx']}`")
    if v.get("python"):
        parts.append(f"Python {v['python']}")
    return ", ".join(parts)


# ---- gathering ----


_GATHERING = threading.Lock()  # LLM steps run in threads: the first prompts of a run must not probe twice


def device_facts(target: str) -> DeviceFacts:
    """This machine's facts for `target`, gathered once per process; never raises."""
    with _GATHERING:
        return _gathered(target)


def forget() -> None:
    """Gather afresh at the next call (tests; a process whose machine changed)."""
    _gathered.cache_clear()


@functools.cache
def _gathered(target: str) -> DeviceFacts:
    try:
        facts = _gpu_facts(target) if get_platform(target).separate_device() else _cpu_facts()
    except Exception:  # noqa: BLE001 - a prompt without some facts beats no prompt
        facts = DeviceFacts(target)
    try:
        facts.versions = {**versions(target), **facts.versions}
    except Exception:  # noqa: BLE001
        pass
    return facts


def versions(target: str) -> dict[str, str]:
    """torch, triton, the CUDA/HIP torch was built with, nvcc (GPU targets), the C++ compiler, Python."""
    out = {"python": pyplatform.python_version()}
    for key, dist in (("torch", "torch"), ("triton", "triton"), ("triton", "pytorch-triton-rocm")):
        try:
            out.setdefault(key, importlib.metadata.version(dist))
        except importlib.metadata.PackageNotFoundError:
            pass
    out.update(_torch_build())
    cxx = _first_line([os.environ.get("CXX") or "c++", "--version"])
    if cxx:
        out["cxx"] = cxx
    if target == "cuda":
        nvcc = _nvcc()
        if nvcc:
            out["nvcc"] = nvcc
    return out


def _torch_build() -> dict[str, str]:
    """torch.version.cuda / .hip, read from torch/version.py without importing torch."""
    spec = importlib.util.find_spec("torch")
    if spec is None or not spec.submodule_search_locations:
        return {}
    path = Path(list(spec.submodule_search_locations)[0]) / "version.py"
    try:
        tree = parse(path.read_text())
    except (OSError, SyntaxError):
        return {}
    out = {}
    for node in tree.body:
        if not isinstance(node, (ast.Assign, ast.AnnAssign)):
            continue
        target = node.target if isinstance(node, ast.AnnAssign) else node.targets[0]
        value = node.value
        if isinstance(target, ast.Name) and target.id in ("cuda", "hip") and isinstance(value, ast.Constant):
            if isinstance(value.value, str) and value.value:
                out[target.id] = value.value
    return out


def _first_line(command: list[str]) -> str:
    try:
        p = subprocess.run(command, capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return ""
    lines = (p.stdout or p.stderr).strip().splitlines()
    return lines[0].strip() if p.returncode == 0 and lines else ""


def _nvcc() -> str:
    home = os.environ.get("CUDA_HOME") or os.environ.get("CUDA_PATH") or "/usr/local/cuda"
    nvcc = shutil.which("nvcc") or (str(Path(home) / "bin" / "nvcc") if (Path(home) / "bin" / "nvcc").is_file() else "")
    if not nvcc:
        return ""
    try:
        p = subprocess.run([nvcc, "--version"], capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return ""
    m = re.search(r"release ([\d.]+)", p.stdout)
    return m.group(1) if m else ""


def _gpu_facts(target: str) -> DeviceFacts:
    facts = DeviceFacts(target, machine=pyplatform.machine())
    if not device_present(target):  # a dry run for a GPU elsewhere: nothing to probe
        return facts
    data = _probe()
    if data:
        build = {k: str(data.pop(k)) for k in ("cuda", "hip") if data.get(k)}
        facts = DeviceFacts.from_dict({**facts.to_dict(), **data})
        facts.versions.update(build)
    elif target == "cuda":
        facts.name = _nvidia_driver_model()
    _add_gpu_peaks(facts)
    return facts


def _probe() -> dict[str, Any]:
    try:
        p = subprocess.run([sys.executable, "-c", GPU_PROBE], capture_output=True, text=True, timeout=PROBE_TIMEOUT_S)
        lines = p.stdout.strip().splitlines()
        data = json.loads(lines[-1]) if p.returncode == 0 and lines else {}
    except (OSError, subprocess.SubprocessError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _nvidia_driver_model() -> str:
    """The first GPU's model as the driver names it (no torch, no CUDA context)."""
    for info in sorted(Path("/proc/driver/nvidia/gpus").glob("*/information")):
        try:
            for line in info.read_text().splitlines():
                if line.startswith("Model:"):
                    return line.split(":", 1)[1].strip()
        except OSError:
            continue
    return ""


def _add_gpu_peaks(facts: DeviceFacts) -> None:
    sheet = datasheet(facts.name) if facts.name else None
    facts.datasheet = list(sheet) if sheet else None
    measured = cached(facts.name, facts.versions.get("torch") or _torch_version()) if facts.name else None
    if measured is not None:
        facts.bandwidth_gbs, facts.bandwidth_source = measured.bandwidth_gbs, "measured"
        facts.fp32_tflops, facts.half_tflops = measured.fp32_tflops, measured.half_tflops
        facts.flops_source = "measured"


def _torch_version() -> str:
    try:
        return importlib.metadata.version("torch")
    except importlib.metadata.PackageNotFoundError:
        return ""


def _cpu_facts() -> DeviceFacts:
    facts = DeviceFacts("cpu", machine=pyplatform.machine())
    info = _cpuinfo()
    facts.name = info.get("model name") or info.get("Model name") or info.get("Hardware") or host_name()
    flags = set((info.get("flags") or info.get("Features") or "").split())
    facts.isa = [f for f in KERNEL_FLAGS if f in flags]
    try:
        facts.mhz = float(info["cpu MHz"]) if info.get("cpu MHz") else None
    except ValueError:
        facts.mhz = None
    try:
        facts.cores = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        facts.cores = os.cpu_count()
    facts.physical_cores = _physical_cores() or None
    facts.threads = os.environ.get("OMP_NUM_THREADS", "")
    _add_caches(facts)
    facts.memory_bytes = _mem_total()
    _add_cpu_peaks(facts)
    return facts


def _cpuinfo() -> dict[str, str]:
    """The first processor's fields of /proc/cpuinfo."""
    out: dict[str, str] = {}
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        return out
    for line in text.splitlines():
        if not line.strip():
            if out:
                break
            continue
        key, _, value = line.partition(":")
        out.setdefault(key.strip(), value.strip())
    return out


def _physical_cores() -> int:
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        return 0
    cores, phys = set(), ""
    for line in text.splitlines():
        key, _, value = line.partition(":")
        key = key.strip()
        if key == "physical id":
            phys = value.strip()
        elif key == "core id":
            cores.add((phys, value.strip()))
    return len(cores)


def _parse_size(text: str) -> int | None:
    m = re.fullmatch(r"\s*(\d+)\s*([KMG]?)i?B?\s*", text)
    if not m:
        return None
    return int(m.group(1)) * {"": 1, "K": KIB, "M": 2**20, "G": GIB}[m.group(2)]


def _cpu_count(cpu_list: str) -> int:
    n = 0
    for part in cpu_list.strip().split(","):
        if "-" in part:
            lo, hi = part.split("-", 1)
            n += int(hi) - int(lo) + 1
        elif part.strip():
            n += 1
    return n


def _add_caches(facts: DeviceFacts, root: Path = Path("/sys/devices/system/cpu/cpu0/cache")) -> None:
    for index in sorted(root.glob("index*")):
        try:
            level = (index / "level").read_text().strip()
            kind = (index / "type").read_text().strip()
            size = _parse_size((index / "size").read_text())
            shared = _cpu_count((index / "shared_cpu_list").read_text())
        except (OSError, ValueError):
            continue
        if level == "1" and kind == "Data":
            facts.l1d_bytes = size
        elif level == "2" and kind in ("Unified", "Data"):
            facts.l2_cache_bytes = size
        elif level == "3":
            facts.l3_bytes, facts.l3_shared_by = size, shared


def _mem_total() -> int | None:
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                return int(line.split()[1]) * KIB
    except (OSError, ValueError, IndexError):
        pass
    return None


def _add_cpu_peaks(facts: DeviceFacts) -> None:
    """Measured figures where the worker cached them (peaks.py keys the cpu by host_name()), else a bandwidth
    assumed per core and a FLOP rate estimated from the ISA, clock and cores."""
    measured = cached(host_name(), _torch_version())
    cores = facts.physical_cores or facts.cores or 1
    if measured is not None:
        facts.bandwidth_gbs, facts.bandwidth_source = measured.bandwidth_gbs, "measured"
        facts.fp32_tflops, facts.flops_source = measured.fp32_tflops, "measured"
        return
    facts.bandwidth_gbs, facts.bandwidth_source = ASSUMED_GBS_PER_CORE * cores, "assumed"
    per_cycle = next((n for flag, n in FP32_FLOPS_PER_CYCLE if flag in facts.isa), 8)
    if facts.mhz:
        facts.fp32_tflops = cores * facts.mhz * 1e6 * per_cycle / 1e12
        facts.flops_source = "estimated"
