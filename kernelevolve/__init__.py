"""KernelEvolve. `kernelevolve.enable(KERNEL_DIR)` / `kernelevolve.disable()` run exported kernels inside any model
(docs/aten.md "Kernels in a model: enable()"); `kernelevolve.swap(model, DIR)` rebuilds a model with the kernels a
`kernelevolve model ... --search` saved (docs/model.md "Swap-in"). They are imported on first use, so importing the
package (as every worker process does) imports nothing else."""

from __future__ import annotations

from typing import Any

__all__ = ["disable", "enable", "swap"]


def __getattr__(name: str) -> Any:
    if name == "swap":
        from kernelevolve.model.swap import swap

        return swap
    if name in __all__:
        from kernelevolve.kernels import enable as _enable

        return getattr(_enable, name)
    raise AttributeError(f"module 'kernelevolve' has no attribute {name!r}")
