"""One node's record as a person reads it: what `show --node N` prints and what the report's node panel shows,
gathered once so the two never disagree."""

from __future__ import annotations

import difflib
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kernelevolve.result import EvalResult
from kernelevolve.store.models import Node, Run
from kernelevolve.store.store import Store

LOG_LINES = 40  # of a failed node's worker log
ROOTS = ("seed", "start", "warm-start")


def kind_of(node: Node, by_id: dict[int, Node]) -> str:
    """The step's kind as the search took it: a draft, a refine of a correct parent or a debug of a failed one,
    a tune, a crossover, or a root (seed, start, warm-start). The store keeps only `llm`/`llm-draft` for the
    model's steps; which of refine and debug it was follows from the parent's verdict."""
    if node.operator == "llm-draft":
        return "draft"
    if node.operator == "llm":
        parent = by_id.get(node.parents[0].parent_id) if node.parents else None
        return "debug" if parent is not None and not parent.correct else "refine"
    return node.operator


@dataclass
class Diff:
    parent: int  # the parent's number within the run
    operator: str
    path: str  # the parent's kernel, relative to the runs dir
    text: str | None  # a unified diff ("" when the sources are the same); None: a source file is missing


@dataclass
class NodeDetail:
    """Everything known about one node; paths are resolved, texts are as stored."""

    run_id: str
    step: int
    operator: str
    kind: str
    status: str
    correct: bool
    fitness: float | None
    speedup: float | None
    reason: str
    params: dict[str, Any]
    parents: list[tuple[int, str]]  # (number within the run, operator)
    reused: str  # where its evaluation came from, "" when it was evaluated for this node
    folder: Path
    files: list[str] | None  # None: the folder is missing
    kernel: Path
    source: str | None  # None: the file is missing
    diffs: list[Diff] = field(default_factory=list)
    evaluation: EvalResult | None = None
    log_path: Path | None = None
    log: str = ""  # a failed node's log tail (its last LOG_LINES lines)
    analysis: dict[str, Any] | None = None
    knowledge: list[str] = field(default_factory=list)  # the knowledge-base documents its prompt carried
    llm_call: dict[str, Any] | None = None  # as Store.llm_call_of gives it, plus prompt and answer texts and paths


def node_detail(store: Store, run: Run, node: Node, nodes: list[Node] | None = None) -> NodeDetail:
    """The node's record; nodes: the run's nodes, when the caller has them already (a report reads every node)."""
    by_id = {n.id: n for n in (nodes if nodes is not None else store.nodes(run.id))}
    parents = [by_id[e.parent_id] for e in node.parents if e.parent_id in by_id]
    reused = ""
    if node.reused_from is not None:
        origin = by_id.get(node.reused_from) or store.node(node.reused_from)
        reused = (
            f"evaluation reused from run {origin.run_id}, node {origin.step} (the same source, evaluated there)"
            if origin is not None
            else "evaluation reused from an earlier evaluation of the same source"
        )
    kernel = store.path(node.kernel_path)
    folder = kernel.parent
    source = _read(store, node.kernel_path)
    diffs = []
    for p in parents:
        parent_source = _read(store, p.kernel_path)
        text = None
        if source is not None and parent_source is not None:
            text = "".join(
                difflib.unified_diff(
                    parent_source.splitlines(keepends=True),
                    source.splitlines(keepends=True),
                    fromfile=f"node {p.step}: {p.kernel_path}",
                    tofile=f"node {node.step}: {node.kernel_path}",
                )
            )
        diffs.append(Diff(p.step, p.operator, p.kernel_path, text))
    log_path = folder / "log.txt"
    log = ""
    if not node.correct:
        log_text = _read(store, str(Path(node.kernel_path).parent / "log.txt")) or ""
        log = "\n".join(log_text.rstrip("\n").splitlines()[-LOG_LINES:])
    analysis = store.analysis(node.id)
    return NodeDetail(
        run_id=run.id,
        step=node.step,
        operator=node.operator,
        kind=kind_of(node, by_id),
        status=node.status,
        correct=node.correct,
        fitness=node.fitness,
        speedup=node.speedup,
        reason=node.reason,
        params=json.loads(node.params or "{}"),
        parents=[(p.step, p.operator) for p in parents],
        reused=reused,
        folder=folder.resolve(),
        files=sorted(p.name for p in folder.iterdir()) if folder.is_dir() else None,
        kernel=kernel.resolve(),
        source=source,
        diffs=diffs,
        evaluation=store.evaluation(node.id),
        log_path=log_path.resolve() if log.strip() else None,
        log=log if log.strip() else "",
        analysis=analysis,
        knowledge=list((analysis or {}).get("knowledge") or []),
        llm_call=llm_transcript(store, node.id),
    )


def llm_transcript(store: Store, node_id: int) -> dict[str, Any] | None:
    """The LLM call that wrote the node (Store.llm_call_of) with its prompt and answer read from their files
    (`prompt`, `answer`: None where a file is missing; `prompt_file`, `answer_file`: their resolved paths)."""
    call = store.llm_call_of(node_id)
    if call is not None:
        for label, key in (("prompt", "prompt_path"), ("answer", "response_path")):
            call[f"{label}_file"] = str(store.path(call[key]).resolve())
            call[label] = _read(store, call[key]) if call[key] else None
    return call


def _read(store: Store, relative: str) -> str | None:
    """A file of the object store (from the database where this machine lacks it), None where unreadable."""
    try:
        return store.read(relative)
    except (OSError, UnicodeDecodeError):
        return None
