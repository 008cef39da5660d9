"""`kernelevolve show RUN --node N`: one node's record, numbered within its run as every message numbers it;
with `--prompt`, only what the node's model saw and answered."""

from __future__ import annotations

import difflib
import json
from typing import Any

from rich.console import Console
from rich.table import Table
from rich.text import Text

from kernelevolve.result import EvalResult
from kernelevolve.store.models import Node, Run
from kernelevolve.store.store import Store

LOG_LINES = 40  # of a failed node's worker log


def _fmt(value: float | None, unit: str = "") -> str:
    return f"{value:.4g}{unit}" if value is not None else "-"


def show_node(store: Store, run: Run, node: Node, console: Console) -> None:
    """Its files, source, diff from each parent, evaluation per case, the memory agent's analysis, and the LLM
    call that produced it (prompt and answer). Text from files is printed as it is: no markup, no wrapping."""

    def say(text: str) -> None:
        console.print(text, markup=False, highlight=False, emoji=False, soft_wrap=True)

    def heading(text: str) -> None:
        console.print(Text(f"\n== {text}", style="bold"), soft_wrap=True)

    steps = {n.id: n for n in store.nodes(run.id)}
    parents = [steps[e.parent_id] for e in node.parents if e.parent_id in steps]
    say(
        f"run {run.id}, node {node.step} ({node.operator}): {node.status}"
        + (f", fitness {node.fitness:.3f}" if node.fitness else "")
        + (f", speedup {node.speedup:.3f}x" if node.speedup else "")
    )
    say(
        "parents: " + ", ".join(f"node {p.step} ({p.operator})" for p in parents)
        if parents
        else "parents: none (a starting point of the run)"
    )
    say(f"params: {json.dumps(json.loads(node.params or '{}'))}")
    if node.reused_from is not None:
        origin = store.node(node.reused_from)
        say(
            f"evaluation reused from run {origin.run_id}, node {origin.step} (the same source, evaluated there)"
            if origin is not None
            else "evaluation reused from an earlier evaluation of the same source"
        )
    kernel = store.path(node.kernel_path)
    folder = kernel.parent
    files = ", ".join(sorted(p.name for p in folder.iterdir())) if folder.is_dir() else "(missing)"
    say(f"files: {folder.resolve()}: {files}")

    heading(f"source: {kernel.resolve()}")
    source = kernel.read_text() if kernel.is_file() else None
    say(source.rstrip("\n") if source is not None else "(the file is missing)")

    for p in parents:
        parent_path = store.path(p.kernel_path)
        heading(f"diff from node {p.step} ({p.operator}), the parent")
        if source is None or not parent_path.is_file():
            say("(a source file is missing)")
            continue
        diff = difflib.unified_diff(
            parent_path.read_text().splitlines(keepends=True),
            source.splitlines(keepends=True),
            fromfile=f"node {p.step}: {p.kernel_path}",
            tofile=f"node {node.step}: {node.kernel_path}",
        )
        say("".join(diff).rstrip("\n") or "(no textual difference)")

    heading("evaluation")
    result = store.evaluation(node.id)
    if result is None:
        say("(no evaluation stored)")
    else:
        _evaluation(result, say, console)
    log = folder / "log.txt"
    if not node.correct and log.is_file() and log.read_text().strip():
        heading(f"log (last {LOG_LINES} lines): {log.resolve()}")
        say("\n".join(log.read_text().rstrip("\n").splitlines()[-LOG_LINES:]))

    heading("analysis (memory agent)")
    analysis = store.analysis(node.id)
    if not analysis:
        say("(none stored)")
    else:
        for key, value in analysis.items():
            if key == "node_id" or value in (None, "", [], {}):
                continue
            if isinstance(value, list):
                say(f"{key}:")
                for item in value:
                    say(f"  - {item}")
            else:
                say(f"{key}: {json.dumps(value) if isinstance(value, dict) else value}")

    call = store.llm_call_of(node.id)
    if call is not None:
        _llm_call(store, call, say, heading)


def _evaluation(result: EvalResult, say: Any, console: Console) -> None:
    say(
        f"status {result.status.value}, correct {result.correct}, baseline {result.baseline}, "
        f"fitness {_fmt(result.fitness)}, speedup {_fmt(result.speedup, 'x')}"
    )
    if result.reason:
        say(f"reason: {result.reason}")
    for note in result.review:
        say(f"review: {note}")
    if not result.cases:
        return
    compile_ms = any(c.t_compile_ms is not None for c in result.cases)
    reasons = any(c.reason for c in result.cases)
    columns = ["case", "shape", "correct", "max abs err", "max rel err", "kernel ms", "eager ms"]
    table = Table(*columns, *(["compile ms"] if compile_ms else []), "speedup", *(["reason"] if reasons else []))
    for i, c in enumerate(result.cases):
        cells = [
            str(i),
            Text(json.dumps(c.shape)),
            str(c.correct),
            _fmt(c.max_abs_err),
            _fmt(c.max_rel_err),
            _fmt(c.t_candidate_ms),
            _fmt(c.t_eager_ms),
        ]
        cells += [_fmt(c.t_compile_ms)] if compile_ms else []
        cells.append(_fmt(c.speedup, "x"))
        cells += [Text(c.reason or "-")] if reasons else []
        table.add_row(*cells)
    console.print(table)


def _llm_call(store: Store, call: dict[str, Any], say: Any, heading: Any) -> None:
    heading(
        f"LLM call {call['seq']}: {call['model']}, {call['outcome'] or '-'}, {call['prompt_tokens']} prompt and "
        f"{call['completion_tokens']} completion tokens, {call['cost']:.4f} USD, {call['latency_s']:.1f} s"
    )
    for label, key in (("prompt", "prompt_path"), ("answer", "response_path")):
        path = store.path(call[key])
        heading(f"{label}: {path.resolve()}")
        say(path.read_text().rstrip("\n") if path.is_file() else "(the file is missing)")


def show_prompt(store: Store, run: Run, node: Node, console: Console) -> bool:
    """The prompt node N's model saw and the answer it gave, as stored, printed as they are; False when the node
    was not written by a model (nothing to show)."""

    def say(text: str) -> None:
        console.print(text, markup=False, highlight=False, emoji=False, soft_wrap=True)

    call = store.llm_call_of(node.id)
    if call is None:
        say(f"run {run.id}, node {node.step} ({node.operator}) was not written by a model: it has no prompt")
        return False
    _llm_call(store, call, say, lambda text: console.print(Text(f"\n== {text}", style="bold"), soft_wrap=True))
    return True
