"""One region file of a swap directory: the kernel that beat the baseline on a fused region at the model's shapes,
with its evidence and the region's problem, in a form a person reads and audits (docs/model.md, "Swap-in").

Like an operator's file (kernelevolve/kernels/entry.py), it is a docstring that says what was proven, then
literals, and it is read back with `ast.literal_eval`, never executed: a corrupt or foreign file is found without
running it. Only the swap-in (kernelevolve/model/swap.py) runs the kernel's source.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kernelevolve.kernels.entry import (
    DEVICES,
    EntryError,
    WrittenKind,
    pretty_dict,
    source_literal,
    times,
    written_values,
)

# A swap directory (the --out of `kernelevolve model ... --search`) holds, besides the problems and the search:
KERNELS = "kernels"  # the operators' kernel directory, for kernelevolve.enable()
REGIONS = "regions"  # one region file per region whose kernel won
STATE_DICT = "state_dict.pt"  # the model's own state_dict, under its parameters' names
INPUTS = "example_inputs.pt"  # (args, kwargs) the model was profiled, searched and is exported with

FORMAT = 1
MARKER = "KERNELEVOLVE_REGION_FORMAT"
FIELDS = ("REGION", "KIND", "SIGNATURE", "OPS", "DEVICE", "EVIDENCE", "CASE", "KERNEL", "PROBLEM")
NAME = re.compile(r"[a-z0-9_]{1,64}")


class RegionFileError(Exception):
    """A file of the regions folder that is not a readable region file: the message names the file and the fix."""


@dataclass
class RegionEntry:
    """One region's kernel. case: the model's shape case as the kernel won it ("node", "shape", "verdict",
    "speedup" over eager, "speedup_best" over the faster of eager and torch.compile, "baseline": which one the
    win was judged against, the times)."""

    name: str  # the region's name (its row in the table, its problem's folder)
    kind: str
    signature: str  # the region's signature (regions.py): what the swap-in finds in the model's graph
    ops: list[str]
    device: str  # cpu or cuda
    evidence: dict[str, Any]
    case: dict[str, Any]
    kernel: str  # the winning candidate's source: a ModelNew taking the region's inputs, its weights w0, w1, ...
    problem: str  # the region's problem file: the ATen calls the kernel stands in for
    path: Path | None = field(default=None, compare=False)


def file_name(name: str) -> str:
    return f"{name}.py"


def read(path: Path) -> RegionEntry:
    """The entry in `path`, checked for shape; RegionFileError otherwise."""
    kind = WrittenKind("region", MARKER, FORMAT, tuple(FIELDS), "a regions folder", "kernelevolve model ... --search")
    try:
        values = written_values(path, kind, "search again")
    except EntryError as e:
        raise RegionFileError(str(e)) from None
    entry = RegionEntry(*(values[f] for f in FIELDS), path=path)
    _check(entry, path)
    return entry


def _check(entry: RegionEntry, path: Path) -> None:
    def bad(what: str) -> RegionFileError:
        return RegionFileError(f"{path}: corrupt region file: {what}; search again")

    if not isinstance(entry.name, str) or not NAME.fullmatch(entry.name) or path.name != file_name(entry.name):
        raise bad(f"REGION {entry.name!r} is not a region name matching the file's name")
    texts = (entry.kind, entry.signature, entry.kernel, entry.problem)
    if not all(isinstance(t, str) and t for t in texts):
        raise bad("KIND, SIGNATURE, KERNEL and PROBLEM must be non-empty strings")
    if not isinstance(entry.ops, list) or not all(isinstance(o, str) for o in entry.ops):
        raise bad("OPS is not a list of operator names")
    if entry.device not in DEVICES:
        raise bad(f"DEVICE {entry.device!r} is none of {', '.join(DEVICES)}")
    if not isinstance(entry.evidence, dict) or not isinstance(entry.case, dict):
        raise bad("EVIDENCE or CASE is not a dict")


def render(entry: RegionEntry) -> str:
    """The file's text: the docstring a person reads (what the kernel replaces, where and why), then literals."""
    ev, case = entry.evidence, entry.case
    versions = ", ".join(f"{k} {v}" for k, v in sorted((ev.get("versions") or {}).items())) or "-"
    shape = " ".join(f"{k}={v}" for k, v in (case.get("shape") or {}).items()) or "the model's shapes"
    doc = (
        f"Region `{entry.name}` ({entry.kind}): a KernelEvolve kernel for {', '.join(entry.ops)} on {entry.device}.\n\n"
        f"Node {case.get('node', '?')} of run {ev.get('run', '?')} ({ev.get('problem', '?')}), evaluated on "
        f"{ev.get('device', '?')} (target {ev.get('target', '?')}) at {shape}: {case.get('verdict', '?')};\n"
        f"{times(case.get('speedup'))} over eager, {times(case.get('speedup_best'))} over "
        f"{case.get('baseline', '?')}, the baseline the swap-in judged it against.\nVersions: {versions}.\n\n"
        "kernelevolve.swap(model, DIR) calls KERNEL in place of the region's nodes of the model's graph (found by\n"
        "SIGNATURE) at the shapes the model was searched at; every other call runs the original nodes. PROBLEM is\n"
        'the region as a problem file: the ATen calls the kernel stands in for (docs/model.md, "Swap-in").'
    )
    lines = [f'"""{doc}\n"""', "", f"{MARKER} = {FORMAT}"]
    for name, value in zip(FIELDS[:5], (entry.name, entry.kind, entry.signature, entry.ops, entry.device)):
        lines.append(f"{name} = {value!r}")
    lines += [f"EVIDENCE = {pretty_dict(entry.evidence)}", f"CASE = {pretty_dict(entry.case)}", ""]
    lines += [f"KERNEL = {source_literal(entry.kernel)}", "", f"PROBLEM = {source_literal(entry.problem)}"]
    return "\n".join(lines) + "\n"
