"""Learning across runs: what worked is distilled into the store when a run ends, and a new run starts from
the best kernels of similar past problems (same platform, similar operator signature and inputs).
"""

from __future__ import annotations

import ast
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kernelevolve.problem.problem import parse
from kernelevolve.store.store import Store

SIMILARITY_THRESHOLD = 0.5


def signature(problem_source: str) -> dict[str, Any]:
    """The operator's fingerprint: the calls in Model (torch ops, layers, tensor methods) and forward's arity."""
    try:
        tree = parse(problem_source)
    except SyntaxError:
        return {"ops": [], "arity": -1}
    model = next((n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "Model"), None)
    if model is None:
        return {"ops": [], "arity": -1}
    ops: set[str] = set()
    arity = -1
    for node in ast.walk(model):
        if isinstance(node, ast.Call):
            f = node.func
            if isinstance(f, ast.Attribute):
                ops.add(f.attr)
            elif isinstance(f, ast.Name):
                ops.add(f.id)
        elif isinstance(node, ast.BinOp) and isinstance(node.op, ast.MatMult):
            ops.add("matmul")
        elif isinstance(node, ast.FunctionDef) and node.name == "forward":
            arity = len(node.args.args) - 1
    ops -= {"super", "__init__", "range", "len"}
    return {"ops": sorted(ops), "arity": arity}


def similarity(a: dict[str, Any], b: dict[str, Any]) -> float:
    """Jaccard similarity of the op sets; 0 when forward takes a different number of inputs."""
    if a.get("arity") != b.get("arity"):
        return 0.0
    sa, sb = set(a.get("ops", [])), set(b.get("ops", []))
    return len(sa & sb) / len(sa | sb) if sa | sb else 1.0


@dataclass
class PastKernel:
    run_id: str
    node_id: int
    problem: str
    similarity: float
    fitness: float
    source: str


def similar_best(
    store: Store, problem_source: str, platform: str, exclude_run: str | None = None, limit: int = 2
) -> list[PastKernel]:
    """The best correct kernel of each earlier run on this platform whose problem is similar enough, most
    similar and fittest first."""
    mine = signature(problem_source)
    found = []
    for run, _, best in store.runs():
        if run.id == exclude_run or run.platform != platform or not best:
            continue
        theirs = json.loads(run.config).get("signature") or _signature_of(run.problem_path)
        sim = similarity(mine, theirs)
        if sim < SIMILARITY_THRESHOLD:
            continue
        nodes = [n for n in store.nodes(run.id) if n.correct and n.fitness]
        if not nodes:
            continue
        top = max(nodes, key=lambda n: n.fitness)
        found.append(
            PastKernel(run.id, top.id, Path(run.problem_path).name, sim, top.fitness, store.read(top.kernel_path))
        )
    found.sort(key=lambda k: (-k.similarity, -k.fitness))
    return found[:limit]


def _signature_of(path: str) -> dict[str, Any]:
    try:
        return signature(Path(path).read_text())
    except OSError:
        return {"ops": [], "arity": -1}


def distill(store: Store, run_id: str) -> list[dict[str, Any]]:
    """What worked in a run: each change that beat its parent, with its measured effect, kept in the run's
    record (`lessons` in the run config) for later runs and for reports."""
    nodes = {n.id: n for n in store.nodes(run_id)}
    lessons = []
    for n in nodes.values():
        parent = nodes.get(n.parents[0].parent_id) if n.parents else None
        if parent is None or not n.correct or not n.fitness or not parent.fitness or n.fitness <= parent.fitness:
            continue
        analysis = store.analysis(n.id) or {}
        lessons.append(
            {
                "node": n.id,
                "parent": parent.id,
                "operator": n.operator,
                "change": analysis.get("strategy", ""),
                "from": parent.fitness,
                "to": n.fitness,
                "gain": n.fitness / parent.fitness,
            }
        )
    lessons.sort(key=lambda x: -x["gain"])
    run = store.get_run(run_id)
    config = json.loads(run.config)
    config["lessons"] = lessons[:20]
    store.update_run(run_id, config=json.dumps(config, sort_keys=True))
    return lessons
