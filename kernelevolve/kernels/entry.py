"""One file of a kernel directory: the kernels of one ATen operator, the table of what each was proven on, and
the evidence (docs/aten.md "Kernels in a model: enable()").

The file is Python a person reads top to bottom (a docstring with the table and the evidence, then literals), and
it is read back with `ast.literal_eval`, never executed: a corrupt or foreign file is found without running it.
Only `enable` runs the kernels' sources, after every file of the directory has been read.
"""

from __future__ import annotations

import ast
import pprint
import re
import textwrap
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

FORMAT = 1
MARKER = "KERNELEVOLVE_KERNEL_FORMAT"
FIELDS = ("ATEN_OPERATOR", "ATEN_VARIANTS", "DEVICE", "INIT_INPUTS", "EVIDENCE", "DISPATCH", "KERNELS")
DEVICES = {"cpu": "CPU", "cuda": "CUDA"}  # the kernel's device -> the dispatch key it is registered for
OPERATOR = re.compile(r"aten::[A-Za-z0-9_]+(\.[A-Za-z0-9_]+)?")


class EntryError(Exception):
    """A file of the directory that is not a readable kernel entry: the message names the file and the fix."""


@dataclass
class Entry:
    """One operator's kernels. dispatch: per proven case, {"kernel": name in kernels, "arguments": Pattern of
    every schema argument, "inputs" and "keywords" (how the kernel is called: write.py `convention`), "node",
    "shape", "verdict", "speedup", ...}."""

    operator: str
    variants: list[str]
    device: str
    init_inputs: list[Any]
    evidence: dict[str, Any]
    dispatch: list[dict[str, Any]]
    kernels: dict[str, str]
    path: Path | None = field(default=None, compare=False)

    @property
    def dispatch_key(self) -> str:
        return DEVICES[self.device]


def file_name(operator: str) -> str:
    """aten::add.Tensor -> aten__add.Tensor.py: the operator's name as torch spells it, readable in a listing."""
    return operator.replace("::", "__") + ".py"


def read(path: Path) -> Entry:
    """The entry in `path`, checked for shape (not against torch: `enable` does that). EntryError otherwise."""
    values = written_values(path, KERNEL_FILE, "export it again")
    entry = Entry(*(values[f] for f in FIELDS), path=path)
    _check(entry, path)
    return entry


@dataclass
class WrittenKind:
    """A kind of file KernelEvolve writes and reads back as literals: its marker, format and fields."""

    what: str  # "kernel", "region"
    marker: str
    format: int
    fields: tuple[str, ...]
    folder: str  # the folder such files fill, as the message says it
    writer: str  # the command that writes them


KERNEL_FILE = WrittenKind(
    "kernel", MARKER, FORMAT, FIELDS, "a kernel directory", "kernelevolve export RUN --kernel-dir DIR"
)


def written_values(path: Path, kind: WrittenKind, again: str) -> dict[str, Any]:
    """The literals of a file of `kind`, its marker, format and fields checked; EntryError saying which and how to
    fix it (`again`: what writes the file anew)."""
    values = literals(path, kind.what)
    if kind.marker not in values:
        raise EntryError(
            f"{path}: not a KernelEvolve {kind.what} file (no {kind.marker}); {kind.folder} holds only files written "
            f"by `{kind.writer}`: move this one out"
        )
    if values[kind.marker] != kind.format:
        raise EntryError(
            f"{path}: {kind.what} file format {values[kind.marker]!r}, this KernelEvolve reads {kind.format}"
        )
    missing = [f for f in kind.fields if f not in values]
    if missing:
        raise EntryError(f"{path}: corrupt {kind.what} file: no literal {', '.join(missing)}; {again}")
    return values


def literals(path: Path, what: str) -> dict[str, Any]:
    """The module-level `NAME = literal` assignments of a file, read with `ast.literal_eval` (never executed);
    EntryError where the file does not parse. A name whose value is no literal is left out."""
    try:
        tree = ast.parse(path.read_text(), filename=str(path))
    except (OSError, UnicodeDecodeError, SyntaxError, ValueError) as e:
        raise EntryError(f"{path}: not a readable {what} file ({type(e).__name__}: {e}); export it again") from None
    values: dict[str, Any] = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            try:
                values[node.targets[0].id] = ast.literal_eval(node.value)
            except ValueError:
                continue  # not a literal: a name the reader needs must be one, and it checks
    return values


def _check(entry: Entry, path: Path) -> None:
    def bad(what: str) -> EntryError:
        return EntryError(f"{path}: corrupt kernel file: {what}; export it again")

    if not isinstance(entry.operator, str) or not OPERATOR.fullmatch(entry.operator):
        raise bad(f"ATEN_OPERATOR {entry.operator!r} is not an operator name like 'aten::add.Tensor'")
    if path.name != file_name(entry.operator):
        raise bad(f"the file for {entry.operator} is named {file_name(entry.operator)}")
    if not isinstance(entry.variants, list) or not all(
        isinstance(v, str) and OPERATOR.fullmatch(v) for v in entry.variants
    ):
        raise bad("ATEN_VARIANTS is not a list of operator names")
    if entry.device not in DEVICES:
        raise bad(f"DEVICE {entry.device!r} is none of {', '.join(DEVICES)}")
    if not isinstance(entry.kernels, dict) or not all(isinstance(s, str) for s in entry.kernels.values()):
        raise bad("KERNELS is not a dict of kernel sources")
    if not isinstance(entry.dispatch, list) or not entry.dispatch:
        raise bad("DISPATCH is not a non-empty list of proven cases")
    for case in entry.dispatch:
        if not isinstance(case, dict) or case.get("kernel") not in entry.kernels:
            raise bad(f"a DISPATCH case names no kernel of KERNELS: {case!r:.120}")
        if not isinstance(case.get("arguments"), list) or not all(_argument(a) for a in case["arguments"]):
            raise bad(f"a DISPATCH case's arguments are not argument patterns: {case.get('arguments')!r:.120}")
        keywords = case.get("keywords", [])
        if (
            not isinstance(case.get("inputs", 0), int)
            or not isinstance(keywords, list)
            or not all(isinstance(k, str) for k in keywords)
        ):
            raise bad(f"a DISPATCH case's inputs is not a count or its keywords not names: {case!r:.120}")
    if not isinstance(entry.init_inputs, list) or not isinstance(entry.evidence, dict):
        raise bad("INIT_INPUTS is not a list or EVIDENCE not a dict")


def _argument(a: Any) -> bool:
    if not isinstance(a, dict):
        return False
    if set(a) == {"value"}:
        return isinstance(a["value"], str)
    return set(a) == {"shape", "dtype", "layout"} and isinstance(a["shape"], list) and isinstance(a["dtype"], str)


def render(entry: Entry) -> str:
    """The file's text: the docstring a person reads (the table, the evidence), then the literals `read` reads."""
    ev = entry.evidence
    rows = ["| case | shape | kernel | verdict | speedup over eager | over the faster of eager, compile |"]
    rows.append("| --- | --- | --- | --- | --- | --- |")
    for i, c in enumerate(entry.dispatch):
        shape = " ".join(f"{k}={v}" for k, v in (c.get("shape") or {}).items()) or "-"
        rows.append(
            f"| {i} | {shape} | {c['kernel']} | {c.get('verdict', '?')} "
            f"| {times(c.get('speedup'))} | {times(c.get('speedup_best'))} |"
        )
    versions = ", ".join(f"{k} {v}" for k, v in sorted((ev.get("versions") or {}).items())) or "-"
    doc = (
        f"{entry.operator}: KernelEvolve kernels for the {entry.device} dispatch key.\n\n"
        f"Variants served through the shim: {', '.join(entry.variants) or 'none'}.\n"
        f"Evidence: run {ev.get('run', '?')} of {ev.get('problem', '?')}, evaluated on {ev.get('device', '?')} "
        f"(target {ev.get('target', '?')}); correctness: {ev.get('correctness', '?')}.\nVersions: {versions}.\n\n"
        "Each case below is the call (every argument's shape, dtype and layout, in DISPATCH) the kernel was proven\n"
        "on; every other call of the operator runs ATen's own kernel. Speedups are this kernel's evaluation.\n\n"
        + "\n".join(rows)
    )
    lines = [f'"""{doc}\n"""', "", f"{MARKER} = {FORMAT}"]
    for name, value in zip(FIELDS[:-1], (entry.operator, entry.variants, entry.device, entry.init_inputs)):
        lines.append(f"{name} = {value!r}")
    lines += [f"EVIDENCE = {pretty_dict(entry.evidence)}", "", "DISPATCH = ["]
    lines += [textwrap.indent(pprint.pformat(c, width=116, sort_dicts=False), "    ") + "," for c in entry.dispatch]
    lines += ["]", "", "KERNELS = {"]
    for name, source in entry.kernels.items():
        lines.append(f"    {name!r}: {source_literal(source)},")
    lines.append("}")
    return "\n".join(lines) + "\n"


def pretty_dict(value: dict[str, Any]) -> str:
    return "{\n" + "".join(f"    {k!r}: {v!r},\n" for k, v in value.items()) + "}"


def source_literal(source: str) -> str:
    """A kernel's source as a literal that reads as code: a raw triple-quoted string where it can be one."""
    for quote in ('"""', "'''"):
        if quote not in source and not source.endswith(("\\", quote[0])) and "\r" not in source:
            return f"r{quote}{source}{quote}"
    return repr(source)


def times(v: float | None) -> str:
    return f"{v:.2f}x" if v else "-"
