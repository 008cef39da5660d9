"""NVIDIA GPUs: Triton and CUDA C++ (load_inline) kernels, timed with CUDA events.

The worker's side of the seam for a torch "cuda" device: its synchronisation, events and graphs, its caching
allocator's memory, its profiler window. ROCm builds of torch serve AMD GPUs through the same calls (rocm.py)."""

from __future__ import annotations

import os
from collections.abc import Callable
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from kernelevolve.platforms.base import DeviceMissing, Platform

if TYPE_CHECKING:
    import torch


@dataclass(frozen=True)
class CudaPlatform(Platform):
    """A GPU that torch drives as its "cuda" device type."""

    def present(self) -> bool:
        return os.path.exists("/proc/driver/nvidia/version") or os.path.exists("/dev/nvidiactl")

    def separate_device(self) -> bool:
        return True

    def candidate_in_judge(self) -> bool:
        from kernelevolve.eval.wire import gpu_judge_split

        return not gpu_judge_split()  # a mistyped mode is said here

    def spare_workers(self) -> int:
        return 4

    def open_device(self, index: int) -> torch.device:
        import torch

        if not torch.cuda.is_available():
            raise DeviceMissing(f"target {self.name!r} needs a GPU, but torch sees none (torch {torch.__version__})")
        device = torch.device("cuda", index)
        torch.cuda.set_device(device)
        return device

    def current_device(self, index: int | None = None) -> torch.device | None:
        import torch

        if not torch.cuda.is_available():
            return None
        return torch.device("cuda", torch.cuda.current_device() if index is None else index)

    def usable(self) -> bool:
        import torch

        return torch.cuda.is_available()

    def build_arch(self) -> str:
        import torch

        if not torch.cuda.is_available():
            return ""
        major, minor = torch.cuda.get_device_capability()
        return f"{major}.{minor}"

    def initialized(self) -> bool:
        import torch

        return torch.cuda.is_initialized()

    def synchronizer(self) -> Callable[..., None]:
        import torch

        return torch.cuda.synchronize

    def event_factory(self) -> Any:
        import torch

        return torch.cuda.Event

    def spin(self, cycles: int) -> None:
        import torch

        torch.cuda._sleep(cycles)

    def capture(self, call: Callable[[], Any], device: torch.device, warm_ups: int = 2) -> tuple[Any, Any]:
        """A CUDA graph of one run of `call` (warmed up on a side stream first, as capture requires), and what the
        captured run returned; raises where the call cannot be captured."""
        import torch

        stream = torch.cuda.Stream(device)
        stream.wait_stream(torch.cuda.current_stream(device))
        with torch.cuda.stream(stream):
            for _ in range(warm_ups):
                call()
        torch.cuda.current_stream(device).wait_stream(stream)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            out = call()
        return graph, out

    def device_name(self, device: torch.device) -> str:
        import torch

        return torch.cuda.get_device_name(device)

    def build_versions(self) -> dict[str, str]:
        import torch

        return {"cuda": str(torch.version.cuda or torch.version.hip)}

    def device_count(self) -> None:
        import torch

        torch.cuda.device_count()

    def set_device(self, device: torch.device) -> None:
        import torch

        torch.cuda.set_device(device)

    def device_events(self, call: Callable[[], Any], device: torch.device) -> list[tuple[str, float]] | None:
        """Through torch.profiler's CUDA activity."""
        import torch

        try:
            from torch.autograd import DeviceType
            from torch.profiler import ProfilerActivity, profile

            with profile(activities=[ProfilerActivity.CUDA]) as prof:
                call()
                torch.cuda.synchronize(device)
            return [(e.name, _elapsed_us(e)) for e in prof.events() if e.device_type == DeviceType.CUDA]
        except Exception:  # noqa: BLE001 - a profiler that does not work here cannot prove anything either way
            return None

    def profiled(self) -> AbstractContextManager[None]:
        return _profiler_window()

    def free_bytes(self, device: torch.device) -> int:
        import torch

        free, _ = torch.cuda.mem_get_info(device)
        return free + torch.cuda.memory_reserved(device) - torch.cuda.memory_allocated(device)

    def others_bytes(self, device: torch.device) -> tuple[int, int]:
        import torch

        free, total = torch.cuda.mem_get_info(device)
        return max(0, total - free - torch.cuda.memory_reserved(device)), total

    def held_and_free(self, device: torch.device) -> tuple[int, int, int]:
        import torch

        held = torch.cuda.memory_reserved(device)
        free, total = torch.cuda.mem_get_info(device)
        return held, free, total

    def cached_bytes(self, device: torch.device) -> tuple[int, int]:
        import torch

        return torch.cuda.memory_reserved(device), torch.cuda.memory_allocated(device)

    def reset_peak_memory(self, device: torch.device) -> None:
        import torch

        torch.cuda.reset_peak_memory_stats(device)

    def peak_memory(self, device: torch.device) -> int | None:
        import torch

        return torch.cuda.max_memory_allocated(device)

    def empty_cache(self) -> None:
        import torch

        torch.cuda.empty_cache()

    def memory_pool(self) -> Any:
        import torch

        return torch.cuda.MemPool()

    def use_memory_pool(self, pool: Any) -> AbstractContextManager[None]:
        import torch

        return torch.cuda.use_mem_pool(pool)


def _elapsed_us(event: Any) -> float:
    try:
        return float(event.time_range.elapsed_us())
    except Exception:  # noqa: BLE001 - a duration is a nicety; the name is what the kernel check needs
        return 0.0


@contextmanager
def _profiler_window():
    import torch

    torch.cuda.profiler.start()
    yield
    torch.cuda.profiler.stop()


CUDA = CudaPlatform(
    name="cuda",
    device_type="cuda",
    languages=("triton", "cuda", "cpp", "pytorch"),
    compile_baseline=True,
    archs=("ampere", "hopper", "blackwell"),
    retrieval_words="gpu cuda triton",
    seeds=("seed_triton.py", "seed_cuda.py", "seed.py", "seed_cpp.py"),
)
