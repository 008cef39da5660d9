"""The store: relational metadata (SQLAlchemy) plus the object store (files under the runs directory).

Persistence before progress: a node, its edges, its evaluation and the strategy's state are committed in
one transaction as soon as the evaluation finishes; the search acts on a result only after that.
"""

from __future__ import annotations

import json
import secrets
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from sqlalchemy import create_engine, event, func, select
from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.orm import selectinload, sessionmaker

from kernelevolve.result import EvalResult
from kernelevolve.store.models import Base, Edge, Evaluation, LLMCall, Node, NodeAnalysis, Run

DB_NAME = "kernelevolve.db"


class StoreError(Exception):
    """The store cannot be opened or written (bad URL, read-only or full disk)."""


@dataclass
class LLMCallRecord:
    seq: int
    model: str
    parents: list[int]
    prompt: str
    response: str
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost: float = 0.0
    latency_s: float = 0.0
    outcome: str = ""  # ok | error | unusable | duplicate | evaluated


@dataclass
class NodeRecord:
    """What the driver hands the store for one finished evaluation."""

    operator: str
    source: str
    source_hash: str
    params: dict[str, Any]
    parents: list[int]
    result: EvalResult
    wall_s: float = 0.0
    island: int = 0
    reused_from: int | None = None
    llm_call: LLMCallRecord | None = None
    analysis: dict[str, Any] | None = None


class Store:
    def __init__(self, runs_dir: str | Path, url: str | None = None):
        self.runs_dir = Path(runs_dir)
        try:
            self.runs_dir.mkdir(parents=True, exist_ok=True)
        except OSError as e:
            raise StoreError(f"cannot create the runs directory {self.runs_dir}: {e}") from e
        self.url = url or f"sqlite:///{(self.runs_dir / DB_NAME).resolve()}"
        try:
            self.engine = create_engine(self.url)
            if self.engine.dialect.name == "sqlite":
                event.listen(self.engine, "connect", _sqlite_pragmas)
            Base.metadata.create_all(self.engine)
        except SQLAlchemyError as e:
            raise StoreError(f"cannot open the store at {self.url}: {e}") from e
        self.session = sessionmaker(self.engine, expire_on_commit=False)

    # ---- runs ----

    def create_run(
        self,
        *,
        problem_path: str,
        problem_hash: str,
        platform: str,
        config: dict[str, Any],
        config_hash: str,
        budget: int,
    ) -> Run:
        stamp = datetime.now(timezone.utc).strftime("%Y%m%d-%H%M%S")
        run = Run(
            id=f"{stamp}-{secrets.token_hex(3)}",
            problem_path=problem_path,
            problem_hash=problem_hash,
            platform=platform,
            config=json.dumps(config, sort_keys=True),
            config_hash=config_hash,
            budget=budget,
            status="running",
        )
        with self.session() as s, s.begin():
            s.add(run)
        (self.runs_dir / run.id).mkdir(exist_ok=True)
        return run

    def get_run(self, run_id: str) -> Run | None:
        """By id, or by a unique prefix of one."""
        with self.session() as s:
            run = s.get(Run, run_id)
            if run is None:
                matches = s.scalars(select(Run).where(Run.id.startswith(run_id))).all()
                run = matches[0] if len(matches) == 1 else None
            return run

    def find_resumable(self, config_hash: str) -> Run | None:
        with self.session() as s:
            return s.scalars(select(Run).where(Run.config_hash == config_hash).order_by(Run.created.desc())).first()

    def runs(self) -> list[tuple[Run, int, float | None]]:
        """Every run with its node count and best fitness."""
        with self.session() as s:
            rows = s.execute(
                select(Run, func.count(Node.id), func.max(Node.fitness))
                .outerjoin(Node, Node.run_id == Run.id)
                .group_by(Run.id)
                .order_by(Run.created)
            ).all()
            return [(r, n, best) for r, n, best in rows]

    def update_run(self, run_id: str, **fields: Any) -> None:
        with self.session() as s, s.begin():
            run = s.get(Run, run_id)
            for k, v in fields.items():
                setattr(run, k, v)

    # ---- nodes ----

    def nodes(self, run_id: str) -> list[Node]:
        with self.session() as s:
            return list(
                s.scalars(
                    select(Node).where(Node.run_id == run_id).options(selectinload(Node.parents)).order_by(Node.step)
                ).all()
            )

    def node(self, node_id: int) -> Node | None:
        with self.session() as s:
            return s.scalars(select(Node).where(Node.id == node_id).options(selectinload(Node.parents))).first()

    def source(self, node_id: int) -> str:
        """A node's kernel, from the object store."""
        node = self.node(node_id)
        if node is None:
            raise StoreError(f"no node {node_id} in {self.url}")
        return self.path(node.kernel_path).read_text()

    def has_source(self, run_id: str, source_hash: str) -> bool:
        with self.session() as s:
            return (
                s.scalar(select(func.count(Node.id)).where(Node.run_id == run_id, Node.source_hash == source_hash)) > 0
            )

    def find_evaluated(self, problem_hash: str, platform: str, source_hash: str) -> tuple[Node, EvalResult] | None:
        """An evaluation of this exact source on this problem and platform in any run (never evaluate twice)."""
        with self.session() as s:
            row = s.execute(
                select(Node, Evaluation)
                .join(Run, Run.id == Node.run_id)
                .join(Evaluation, Evaluation.node_id == Node.id)
                .where(
                    Run.problem_hash == problem_hash,
                    Run.platform == platform,
                    Node.source_hash == source_hash,
                    Node.reused_from.is_(None),
                )
                .order_by(Node.id)
            ).first()
            if row is None:
                return None
            return row[0], EvalResult.model_validate_json(row[1].result)

    def evaluation(self, node_id: int) -> EvalResult | None:
        with self.session() as s:
            ev = s.scalars(select(Evaluation).where(Evaluation.node_id == node_id)).first()
            return EvalResult.model_validate_json(ev.result) if ev else None

    def add_node(
        self,
        run_id: str,
        record: NodeRecord,
        *,
        strategy_state: dict[str, Any],
        visit_updates: dict[int, tuple[int, float]] | None = None,
        elapsed_s: float | None = None,
    ) -> Node:
        """Write the artifacts, then commit node, edges, evaluation, strategy state and MCTS statistics at once."""
        kernel_rel, result_rel, log_rel = self._write_artifacts(run_id, record)
        result = record.result
        with self.session() as s, s.begin():
            step = (s.scalar(select(func.max(Node.step)).where(Node.run_id == run_id)) or 0) + 1
            node = Node(
                run_id=run_id,
                step=step,
                operator=record.operator,
                source_hash=record.source_hash,
                params=json.dumps(record.params, sort_keys=True),
                status=result.status.value,
                correct=result.correct,
                fitness=result.fitness,
                speedup=result.speedup,
                reason=result.reason[:2000],
                kernel_path=kernel_rel,
                island=record.island,
                reused_from=record.reused_from,
            )
            node.parents = [Edge(parent_id=p, position=i) for i, p in enumerate(record.parents)]
            s.add(node)
            s.flush()
            s.add(
                Evaluation(
                    node_id=node.id,
                    result=result.model_dump_json(),
                    wall_s=record.wall_s,
                    result_path=result_rel,
                    log_path=log_rel,
                )
            )
            for node_id, (visits, value) in (visit_updates or {}).items():
                other = s.get(Node, node_id)
                other.visits += visits
                other.value_sum += value
            if record.llm_call is not None:
                s.add(self._llm_row(run_id, record.llm_call, node.id))
            if record.analysis is not None:
                s.add(NodeAnalysis(node_id=node.id, data=json.dumps({**record.analysis, "node_id": node.id})))
            run = s.get(Run, run_id)
            run.strategy_state = json.dumps(strategy_state, sort_keys=True)
            if elapsed_s is not None:
                run.elapsed_s = elapsed_s
        return node

    def analysis(self, node_id: int) -> dict[str, Any] | None:
        with self.session() as s:
            row = s.get(NodeAnalysis, node_id)
            return json.loads(row.data) if row else None

    def add_llm_call(self, run_id: str, call: LLMCallRecord) -> None:
        """A call that produced no node (failed, unusable or duplicate response), recorded on its own."""
        with self.session() as s, s.begin():
            s.add(self._llm_row(run_id, call, None))

    def _llm_row(self, run_id: str, call: LLMCallRecord, node_id: int | None) -> LLMCall:
        folder = self.runs_dir / run_id / "llm"
        try:
            folder.mkdir(parents=True, exist_ok=True)
            (folder / f"{call.seq:05d}-prompt.md").write_text(call.prompt)
            (folder / f"{call.seq:05d}-response.md").write_text(call.response)
        except OSError as e:
            raise StoreError(f"cannot write the LLM transcript under {folder}: {e}") from e
        rel = Path(run_id) / "llm"
        return LLMCall(
            run_id=run_id,
            node_id=node_id,
            seq=call.seq,
            parents=json.dumps(call.parents),
            model=call.model,
            prompt_tokens=call.prompt_tokens,
            completion_tokens=call.completion_tokens,
            cost=call.cost,
            latency_s=call.latency_s,
            outcome=call.outcome,
            prompt_path=str(rel / f"{call.seq:05d}-prompt.md"),
            response_path=str(rel / f"{call.seq:05d}-response.md"),
        )

    def llm_calls(self, run_id: str) -> list[dict[str, Any]]:
        with self.session() as s:
            rows = s.scalars(select(LLMCall).where(LLMCall.run_id == run_id).order_by(LLMCall.seq)).all()
            return [
                {
                    "seq": r.seq,
                    "node_id": r.node_id,
                    "parents": json.loads(r.parents),
                    "model": r.model,
                    "prompt_tokens": r.prompt_tokens,
                    "completion_tokens": r.completion_tokens,
                    "cost": r.cost,
                    "latency_s": r.latency_s,
                    "outcome": r.outcome,
                    "prompt_path": r.prompt_path,
                    "response_path": r.response_path,
                }
                for r in rows
            ]

    def llm_usage(self, run_id: str) -> dict[str, dict[str, float]]:
        """Per model: calls, tokens, cost, latency."""
        usage: dict[str, dict[str, float]] = {}
        for c in self.llm_calls(run_id):
            u = usage.setdefault(
                c["model"],
                {"calls": 0, "prompt_tokens": 0, "completion_tokens": 0, "cost": 0.0, "latency_s": 0.0, "failed": 0},
            )
            u["calls"] += 1
            u["prompt_tokens"] += c["prompt_tokens"]
            u["completion_tokens"] += c["completion_tokens"]
            u["cost"] += c["cost"]
            u["latency_s"] += c["latency_s"]
            u["failed"] += c["outcome"] in ("error", "unusable")
        return usage

    def _write_artifacts(self, run_id: str, record: NodeRecord) -> tuple[str, str, str]:
        """Files named by source hash: rewriting after a crash before the commit is harmless."""
        rel = Path(run_id) / "nodes" / record.source_hash
        folder = self.runs_dir / rel
        try:
            folder.mkdir(parents=True, exist_ok=True)
            (folder / "kernel.py").write_text(record.source)
            (folder / "result.json").write_text(record.result.model_dump_json(indent=1, exclude={"log_tail"}))
            (folder / "log.txt").write_text(record.result.log_tail)
        except OSError as e:
            raise StoreError(f"cannot write artifacts under {folder}: {e}") from e
        return str(rel / "kernel.py"), str(rel / "result.json"), str(rel / "log.txt")

    def path(self, relative: str) -> Path:
        return self.runs_dir / relative


def _sqlite_pragmas(dbapi_connection: Any, _record: Any) -> None:
    cursor = dbapi_connection.cursor()
    cursor.execute("PRAGMA journal_mode=WAL")
    cursor.execute("PRAGMA synchronous=NORMAL")
    cursor.execute("PRAGMA busy_timeout=30000")
    cursor.execute("PRAGMA foreign_keys=ON")
    cursor.close()
