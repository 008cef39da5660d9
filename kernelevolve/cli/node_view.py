"""`kernelevolve show RUN --node N`: one node's record, numbered within its run as every message numbers it;
with `--prompt`, only what the node's model saw and answered."""

from __future__ import annotations

import json
from typing import Any

from rich.console import Console
from rich.table import Table
from rich.text import Text

from kernelevolve.cli.common import print_table
from kernelevolve.report.node import LOG_LINES, llm_transcript, node_detail
from kernelevolve.result import EvalResult
from kernelevolve.store.models import Node, Run
from kernelevolve.store.store import Store


def _fmt(value: float | None, unit: str = "") -> str:
    return f"{value:.4g}{unit}" if value is not None else "-"


def show_node(store: Store, run: Run, node: Node, console: Console) -> None:
    """Its files, source, diff from each parent, evaluation per case, the memory agent's analysis, and the LLM
    call that produced it (prompt and answer). Text from files is printed as it is: no markup, no wrapping."""

    def say(text: str) -> None:
        console.print(text, markup=False, highlight=False, emoji=False, soft_wrap=True)

    def heading(text: str) -> None:
        console.print(Text(f"\n== {text}", style="bold"), soft_wrap=True)

    d = node_detail(store, run, node)
    say(
        f"run {run.id}, node {d.step} ({d.operator}): {d.status}"
        + (f", fitness {d.fitness:.3f}" if d.fitness else "")
        + (f", speedup {d.speedup:.3f}x" if d.speedup else "")
    )
    say(
        "parents: " + ", ".join(f"node {step} ({operator})" for step, operator in d.parents)
        if d.parents
        else "parents: none (a starting point of the run)"
    )
    say(f"params: {json.dumps(d.params)}")
    if d.reused:
        say(d.reused)
    say(f"files: {d.folder}: {', '.join(d.files) if d.files is not None else '(missing)'}")

    heading(f"source: {d.kernel}")
    say(d.source.rstrip("\n") if d.source is not None else "(the file is missing)")

    for diff in d.diffs:
        heading(f"diff from node {diff.parent} ({diff.operator}), the parent")
        if diff.text is None:
            say("(a source file is missing)")
            continue
        say(diff.text.rstrip("\n") or "(no textual difference)")

    heading("evaluation")
    if d.evaluation is None:
        say("(no evaluation stored)")
    else:
        _evaluation(d.evaluation, say, console)
    if d.log_path is not None:
        heading(f"log (last {LOG_LINES} lines): {d.log_path}")
        say(d.log)

    heading("analysis (memory agent)")
    if not d.analysis:
        say("(none stored)")
    else:
        for key, value in d.analysis.items():
            if key == "node_id" or value in (None, "", [], {}):
                continue
            if isinstance(value, list):
                say(f"{key}:")
                for item in value:
                    say(f"  - {item}")
            else:
                say(f"{key}: {json.dumps(value) if isinstance(value, dict) else value}")

    if d.llm_call is not None:
        _llm_call(d.llm_call, say, heading)


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
    compile_ms = any(c.timing.compile.median_ms is not None for c in result.cases)
    reasons = any(c.reason for c in result.cases)
    columns = ["case", "shape", "correct", "max abs err", "max rel err", "kernel ms", "eager ms"]
    table = Table(*columns, *(["compile ms"] if compile_ms else []), "speedup", *(["reason"] if reasons else []))
    for i, c in enumerate(result.cases):
        cells = [
            str(i),
            Text(json.dumps(c.shape)),
            str(c.correct),
            _fmt(c.accuracy.max_abs_err),
            _fmt(c.accuracy.max_rel_err),
            _fmt(c.timing.candidate.median_ms),
            _fmt(c.timing.eager.median_ms),
        ]
        cells += [_fmt(c.timing.compile.median_ms)] if compile_ms else []
        cells.append(_fmt(c.speedup, "x"))
        cells += [Text(c.reason or "-")] if reasons else []
        table.add_row(*cells)
    print_table(console, table)


def _llm_call(call: dict[str, Any], say: Any, heading: Any) -> None:
    """call: as node_detail gives it, with the prompt and answer read (None: the file is missing)."""
    heading(
        f"LLM call {call['seq']}: {call['model']}, {call['outcome'] or '-'}, {call['prompt_tokens']} prompt and "
        f"{call['completion_tokens']} completion tokens, {call['cost']:.4f} USD, {call['latency_s']:.1f} s"
    )
    for label in ("prompt", "answer"):
        heading(f"{label}: {call[label + '_file']}")
        say(call[label].rstrip("\n") if call[label] is not None else "(the file is missing)")


def show_prompt(store: Store, run: Run, node: Node, console: Console) -> bool:
    """The prompt node N's model saw and the answer it gave, as stored, printed as they are; False when the node
    was not written by a model (nothing to show)."""

    def say(text: str) -> None:
        console.print(text, markup=False, highlight=False, emoji=False, soft_wrap=True)

    call = llm_transcript(store, node.id)
    if call is None:
        say(f"run {run.id}, node {node.step} ({node.operator}) was not written by a model: it has no prompt")
        return False
    _llm_call(call, say, lambda text: console.print(Text(f"\n== {text}", style="bold"), soft_wrap=True))
    return True
