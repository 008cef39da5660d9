"""Profiling for the memory agent (cuda only), run inside the worker once the candidate has passed and been timed.

Best effort throughout: every function here returns None or an empty list when it cannot say anything, and never
raises, so profiling cannot change a verdict. What it collects (`EvalResult.profile`: `triton`, `kernels`,
`launches`, and `ncu` with `profile="ncu"`, through eval/worker/ncu_probe.py): docs/architecture.md ("Profiling for
the memory agent"); the field: docs/cli.md (`profile`).
"""

from __future__ import annotations

import csv
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

NCU_TIMEOUT_S = 60.0
NCU_METRICS = {
    "gpu__time_duration.sum": "time_us",
    "sm__throughput.avg.pct_of_peak_sustained_elapsed": "sm_pct",
    "dram__throughput.avg.pct_of_peak_sustained_elapsed": "dram_pct",
    "launch__registers_per_thread": "registers",
    "launch__occupancy_limit_registers": "occupancy_limit_registers",
}
MAX_ENTRIES = 24  # per list: a candidate that launches hundreds of kernels gets its largest ones recorded
MAX_NAME = 200
_TIME_UNITS_US = {"nsecond": 1e-3, "ns": 1e-3, "usecond": 1.0, "us": 1.0, "msecond": 1e3, "ms": 1e3, "second": 1e6}


def _short(name: Any) -> str:
    text = str(name)
    return text if len(text) <= MAX_NAME else text[:MAX_NAME] + "..."


# ---- Triton's compiled-kernel metadata ----


def _jit_function(obj: Any) -> Any:
    """The JITFunction behind a global (autotuners and heuristics wrap it in `.fn`), or None."""
    try:
        from triton.runtime.jit import JITFunction
    except ImportError:
        return None
    for _ in range(8):
        if isinstance(obj, JITFunction):
            return obj
        obj = getattr(obj, "fn", None)
        if obj is None:
            return None
    return None


def _defined_in(kernel: Any, module: Any) -> bool:
    """Whether the kernel's Python function comes from the candidate (its module name or its file)."""
    fn = getattr(kernel, "fn", None)
    if getattr(fn, "__module__", None) == getattr(module, "__name__", object()):
        return True
    code = getattr(fn, "__code__", None)
    file = getattr(module, "__file__", None)
    return code is not None and file is not None and code.co_filename == file


def _compiled_kernels(kernel: Any) -> list[Any]:
    """Every CompiledKernel in a JITFunction's cache, on every device. Triton 3.x: `device_caches` maps a device
    to a tuple whose first item is {key: CompiledKernel}; older releases: `cache[device]` is that dict. Only
    existing entries are read: `device_caches` is a defaultdict, and indexing it would build a binder."""
    out: list[Any] = []
    caches = getattr(kernel, "device_caches", None)
    if isinstance(caches, dict):
        for entry in list(caches.values()):
            table = entry[0] if isinstance(entry, tuple) and entry else entry
            if isinstance(table, dict):
                out.extend(table.values())
        return out
    old = getattr(kernel, "cache", None)
    if isinstance(old, dict):
        for table in list(old.values()):
            if isinstance(table, dict):
                out.extend(table.values())
    return out


def _int_or_none(value: Any) -> int | None:
    try:
        return None if value is None else int(value)
    except (TypeError, ValueError):
        return None


def compiled_kernel_info(kernel_name: str, compiled: Any) -> dict[str, Any]:
    """One CompiledKernel's resources. n_regs and n_spills exist once the binary is loaded (the first launch)."""
    meta = getattr(compiled, "metadata", None)
    return {
        "kernel": kernel_name,
        "name": _short(getattr(compiled, "name", None) or getattr(meta, "name", kernel_name)),
        "n_regs": _int_or_none(getattr(compiled, "n_regs", None)),
        "n_spills": _int_or_none(getattr(compiled, "n_spills", None)),
        "shared": _int_or_none(getattr(meta, "shared", None)),
        "num_warps": _int_or_none(getattr(meta, "num_warps", None)),
        "num_stages": _int_or_none(getattr(meta, "num_stages", None)),
    }


def triton_kernel_metadata(module: Any) -> list[dict[str, Any]]:
    """Resources of every compiled specialisation of each Triton kernel defined in the candidate module."""
    out: list[dict[str, Any]] = []
    try:
        seen: set[int] = set()
        for name, value in list(vars(module).items()):
            kernel = _jit_function(value)
            if kernel is None or id(kernel) in seen or not _defined_in(kernel, module):
                continue
            seen.add(id(kernel))
            kernel_name = getattr(getattr(kernel, "fn", None), "__name__", name)
            for compiled in _compiled_kernels(kernel):
                try:
                    out.append(compiled_kernel_info(kernel_name, compiled))
                except Exception:  # noqa: BLE001 - one odd entry loses only itself
                    continue
    except Exception:  # noqa: BLE001 - a Triton whose internals moved: no metadata, no failure
        return out[:MAX_ENTRIES]
    return out[:MAX_ENTRIES]


# ---- torch.profiler: kernels and launches ----


def own_share(events: list[tuple[str, float]], own_names: set[str]) -> float | None:
    """The share of device time in kernels the candidate defines (by name); None without device time. A small
    share means the work runs in PyTorch's or a library's kernels, whatever the candidate launches besides."""
    total = sum(float(us or 0.0) for _, us in events)
    if total <= 0 or not own_names:
        return None
    from kernelevolve.eval.worker.launches import is_candidate_kernel

    own = sum(float(us or 0.0) for name, us in events if is_candidate_kernel(name, own_names))
    return round(own / total, 4)


def summarise_kernels(events: list[tuple[str, float]]) -> dict[str, Any]:
    """Device events (name, microseconds) -> per-kernel count and total time, largest first, and the launches."""
    table: dict[str, dict[str, Any]] = {}
    for name, us in events:
        entry = table.setdefault(name, {"name": _short(name), "count": 0, "device_us": 0.0})
        entry["count"] += 1
        entry["device_us"] += float(us or 0.0)
    kernels = sorted(table.values(), key=lambda e: (-e["device_us"], -e["count"]))
    for e in kernels:
        e["device_us"] = round(e["device_us"], 3)
    return {"kernels": kernels[:MAX_ENTRIES], "launches": len(events)}


def kernel_profile(call: Callable[[], Any], device: Any, own_names: set[str] | None = None) -> dict[str, Any] | None:
    """torch.profiler around one call: {"kernels": [{name, count, device_us}], "launches": N, "own_share": share
    of device time in the candidate's own kernels}; None on failure."""
    from kernelevolve.eval.worker.launches import device_events

    events = device_events(call, device)
    if events is None:
        return None
    return {**summarise_kernels(events), "own_share": own_share(events, own_names or set())}


# ---- Nsight Compute ----


def _number(text: str) -> float | None:
    try:
        return float(text.replace(",", "").strip())
    except (AttributeError, ValueError):
        return None


def parse_ncu_csv(text: str) -> list[dict[str, Any]]:
    """`ncu --csv` output (one row per kernel and metric, among ==PROF== lines and the program's output) ->
    one dict per profiled kernel: name, and the metrics under short names (time_us, sm_pct, dram_pct,
    registers, occupancy_limit_registers; any other metric under its own name)."""
    lines = text.splitlines()
    start = next((i for i, line in enumerate(lines) if line.startswith('"ID"')), None)
    if start is None:
        return []
    rows = csv.DictReader(line for line in lines[start:] if line.startswith('"'))
    kernels: dict[str, dict[str, Any]] = {}
    for row in rows:
        kid, metric = row.get("ID"), row.get("Metric Name")
        if kid is None or not metric or kid == "ID":
            continue
        entry = kernels.setdefault(kid, {"name": _short(row.get("Kernel Name") or "?")})
        for column, key in (("Block Size", "block"), ("Grid Size", "grid")):
            if row.get(column):
                entry.setdefault(key, row[column])
        value = _number(row.get("Metric Value") or "")
        if value is None:
            continue
        key = NCU_METRICS.get(metric, metric)
        if key == "time_us":
            value *= _TIME_UNITS_US.get((row.get("Metric Unit") or "nsecond").strip(), 1e-3)
            value = round(value, 3)
        entry[key] = value
    return list(kernels.values())[:MAX_ENTRIES]


def ncu_command(problem: str, candidate: str, seed: int, device_index: int, log: str) -> list[str]:
    ncu = shutil.which("ncu") or "ncu"
    return [
        ncu,
        "--csv",
        "--metrics",
        ",".join(NCU_METRICS),
        "--target-processes",
        "all",
        "--profile-from-start",
        "off",  # the probe brackets its one forward call with cudaProfilerStart / Stop
        "--log-file",
        log,
        sys.executable,
        "-m",
        "kernelevolve.eval.worker.ncu_probe",
        problem,
        candidate,
        str(seed),
        str(device_index),
        str(int(NCU_TIMEOUT_S)),
    ]


def ncu_metrics(
    problem: str, candidate: str, seed: int, device_index: int = 0, timeout_s: float = NCU_TIMEOUT_S
) -> list[dict[str, Any]] | str:
    """Nsight Compute on one forward call of the first shape case, in a subprocess: per-kernel metrics, or a
    one-line note (ncu missing, failed, timed out, profiled nothing)."""
    if shutil.which("ncu") is None:
        return "ncu not found on PATH"
    try:
        with tempfile.TemporaryDirectory(prefix="kernelevolve-ncu-") as tmp:
            log = str(Path(tmp) / "ncu.csv")
            # Same process group as the worker, so the parent's kill reaches ncu; the probe also stops itself
            # after the timeout (signal.alarm), in case ncu is killed here and leaves it behind.
            proc = subprocess.Popen(
                ncu_command(problem, candidate, seed, device_index, log),
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                env=os.environ.copy(),
            )
            try:
                out, _ = proc.communicate(timeout=timeout_s)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.communicate()
                return f"ncu timed out after {timeout_s:g} s"
            text = Path(log).read_text(errors="replace") if Path(log).is_file() else ""
            stdout = out.decode(errors="replace")
            kernels = parse_ncu_csv(text) or parse_ncu_csv(stdout)
            if kernels:
                return kernels
            tail = " ".join((text + "\n" + stdout).strip().splitlines()[-3:])[-300:]
            return f"ncu profiled no kernel (exit status {proc.returncode}): {tail}".strip()
    except Exception as e:  # noqa: BLE001 - profiling never fails an evaluation
        return f"ncu failed: {type(e).__name__}: {e}"[:300]


# ---- everything, for the harness ----


def collect(
    profile: str,
    candidate_module: Any,
    call: Callable[[], Any],
    device: Any,
    *,
    problem_path: str = "",
    candidate_path: str = "",
    seed: int = 0,
    device_index: int = 0,
    own_names: set[str] | None = None,
) -> dict[str, Any] | None:
    """What the harness stores in `EvalResult.profile` (cuda, after timing); None when profiling is off or
    nothing could be collected. Never raises."""
    if profile not in ("auto", "ncu"):
        return None
    try:
        out: dict[str, Any] = {"triton": triton_kernel_metadata(candidate_module)}
        kernels = kernel_profile(call, device, own_names)
        if kernels is not None:
            out.update(kernels)
        if profile == "ncu":
            out["ncu"] = ncu_metrics(problem_path, candidate_path, seed, device_index)
        return out if out["triton"] or kernels is not None or "ncu" in out else None
    except (Exception, SystemExit):  # noqa: BLE001 - the verdict stands whatever happens here
        return None
