"""What `kernelevolve model --search` writes for the swap-in (docs/model.md, "Swap-in"): each region whose kernel
won at the model's shapes as a region file (region_file.py), and the model's own state_dict and example inputs,
which `kernelevolve.swap(model, DIR)` checks the model against and exports it with."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import torch

from kernelevolve.kernels.write import case_evidence, device_of, evidence, node_source, write_file
from kernelevolve.model.region_file import INPUTS, STATE_DICT, RegionEntry, file_name, render
from kernelevolve.result import EvalResult
from kernelevolve.store.models import Run
from kernelevolve.store.store import Store


def won_case(result: EvalResult) -> dict[str, Any] | None:
    """The model's shape case (a region problem's first, its only one as written) as a region file records it,
    where the kernel beat the faster of eager and torch.compile (eager where compile was not timed); else None."""
    if not result.correct or not result.cases:
        return None
    case = case_evidence(result.cases[0])
    compiled = case["t_compile_ms"] is not None and case["t_eager_ms"] is not None
    faster = "torch.compile" if compiled and case["t_compile_ms"] < case["t_eager_ms"] else "eager"
    case["baseline"] = f"{faster} (the faster of eager and torch.compile)" if compiled else "eager (compile not timed)"
    return case if (case["speedup_best"] or 0.0) > 1.0 else None


def export_region(store: Store, run: Run, row: Any, folder: Path) -> tuple[Path, RegionEntry | None]:
    """Write the region row's file (replacing an earlier one) from its run's fastest kernel that won at the model's
    shapes; the entry is None, and nothing is written, where none won."""
    best: tuple[float, int, dict[str, Any]] | None = None
    evaluations = store.evaluations(run.id, correct_only=True)
    for node_id, result in sorted(evaluations.items()):
        case = won_case(result)
        if case is not None and (best is None or case["speedup_best"] > best[0]):
            best = (case["speedup_best"], node_id, case)
    path = Path(folder) / file_name(row.name)
    if best is None:
        return path, None
    _, node_id, case = best
    node = next(n for n in store.nodes(run.id) if n.id == node_id)
    case = {"node": node.step, "node_id": node.id, **case}
    problem = Path(run.problem_path).read_text()
    entry = RegionEntry(
        row.name, row.kind, row.signature, list(row.ops), device_of(run), evidence(run, evaluations[node_id]), case,
        node_source(store, node), problem,
    )  # fmt: skip
    write_file(path, render(entry))
    return path, entry


def save_model(folder: Path, model: torch.nn.Module, args: tuple, kwargs: dict[str, Any]) -> None:
    """The model's state_dict and its example inputs, on the cpu, beside the kernels (what swap() reads)."""
    folder.mkdir(parents=True, exist_ok=True)
    state = {k: v.detach().cpu() for k, v in model.state_dict().items()}
    on_cpu = torch.utils._pytree.tree_map(lambda v: v.cpu() if isinstance(v, torch.Tensor) else v, (args, kwargs))
    torch.save(state, folder / STATE_DICT)
    torch.save(on_cpu, folder / INPUTS)
