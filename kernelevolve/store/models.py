"""Relational metadata of runs: one row per run, node, edge, evaluation and LLM call.

Portable SQL only (SQLite by default, PostgreSQL by URL): JSON is stored as text, ids are integers or
short strings, and nothing relies on a dialect's extensions.
"""

from __future__ import annotations

from datetime import datetime, timezone

from sqlalchemy import Boolean, DateTime, Float, ForeignKey, Index, Integer, String, Text, UniqueConstraint
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column, relationship


def utcnow() -> datetime:
    return datetime.now(timezone.utc)


class Base(DeclarativeBase):
    pass


class Run(Base):
    __tablename__ = "runs"

    id: Mapped[str] = mapped_column(String(64), primary_key=True)
    problem_path: Mapped[str] = mapped_column(Text)
    problem_hash: Mapped[str] = mapped_column(String(32), index=True)
    platform: Mapped[str] = mapped_column(String(16))
    config_hash: Mapped[str] = mapped_column(String(32), index=True)  # what makes a re-run "the same command"
    config: Mapped[str] = mapped_column(Text)  # JSON
    status: Mapped[str] = mapped_column(String(16), default="running")  # running|done|waiting|interrupted|failed
    stop_reason: Mapped[str] = mapped_column(Text, default="")
    budget: Mapped[int] = mapped_column(Integer, default=0)
    elapsed_s: Mapped[float] = mapped_column(Float, default=0.0)  # search wall time over all sessions
    strategy_state: Mapped[str] = mapped_column(Text, default="{}")  # JSON, committed with each node
    created: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    updated: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow, onupdate=utcnow)

    nodes: Mapped[list[Node]] = relationship(back_populates="run", order_by="Node.id")


class Node(Base):
    __tablename__ = "nodes"
    # Constraints, not luck, keep several searching processes (docs/cli.md, "Several processes on one run") from
    # storing a kernel twice or two nodes under one number.
    __table_args__ = (
        UniqueConstraint("run_id", "source_hash", name="uq_node_source"),
        Index("uq_node_step", "run_id", "step", unique=True),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    run_id: Mapped[str] = mapped_column(ForeignKey("runs.id"), index=True)
    step: Mapped[int] = mapped_column(Integer)  # order of completion within the run
    operator: Mapped[str] = mapped_column(String(32))  # seed | tune | crossover | llm ...
    source_hash: Mapped[str] = mapped_column(String(32), index=True)
    params: Mapped[str] = mapped_column(Text, default="{}")  # JSON: tunable values
    status: Mapped[str] = mapped_column(String(16))
    correct: Mapped[bool] = mapped_column(Boolean, default=False)
    fitness: Mapped[float | None] = mapped_column(Float, nullable=True)
    speedup: Mapped[float | None] = mapped_column(Float, nullable=True)
    reason: Mapped[str] = mapped_column(Text, default="")
    kernel_path: Mapped[str] = mapped_column(Text)  # artifact: the candidate source, relative to the runs dir
    island: Mapped[int] = mapped_column(Integer, default=0)
    visits: Mapped[int] = mapped_column(Integer, default=0)  # MCTS
    value_sum: Mapped[float] = mapped_column(Float, default=0.0)  # MCTS
    reused_from: Mapped[int | None] = mapped_column(Integer, nullable=True)  # evaluation taken from that node
    created: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)

    run: Mapped[Run] = relationship(back_populates="nodes")
    parents: Mapped[list[Edge]] = relationship(
        foreign_keys="Edge.child_id", order_by="Edge.position", cascade="all, delete-orphan"
    )


class Edge(Base):
    """child derived from parent; crossover has two parents (position 0 and 1)."""

    __tablename__ = "edges"

    child_id: Mapped[int] = mapped_column(ForeignKey("nodes.id"), primary_key=True)
    parent_id: Mapped[int] = mapped_column(ForeignKey("nodes.id"), primary_key=True, index=True)
    position: Mapped[int] = mapped_column(Integer, default=0)


class Evaluation(Base):
    __tablename__ = "evaluations"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    node_id: Mapped[int] = mapped_column(ForeignKey("nodes.id"), index=True)
    result: Mapped[str] = mapped_column(Text)  # the EvalResult JSON
    wall_s: Mapped[float] = mapped_column(Float, default=0.0)
    result_path: Mapped[str] = mapped_column(Text, default="")
    log_path: Mapped[str] = mapped_column(Text, default="")
    created: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)


class NodeAnalysis(Base):
    """The memory agent's analysis of a node's evaluation (JSON), committed with the node."""

    __tablename__ = "analyses"

    node_id: Mapped[int] = mapped_column(ForeignKey("nodes.id"), primary_key=True)
    data: Mapped[str] = mapped_column(Text)


class LLMCall(Base):
    __tablename__ = "llm_calls"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    run_id: Mapped[str] = mapped_column(ForeignKey("runs.id"), index=True)
    node_id: Mapped[int | None] = mapped_column(ForeignKey("nodes.id"), nullable=True)
    seq: Mapped[int] = mapped_column(Integer, default=0)  # order the calls were made in (replay serves it)
    parents: Mapped[str] = mapped_column(Text, default="[]")  # JSON: the node ids the prompt was built on
    model: Mapped[str] = mapped_column(String(128))
    prompt_tokens: Mapped[int] = mapped_column(Integer, default=0)
    completion_tokens: Mapped[int] = mapped_column(Integer, default=0)
    cost: Mapped[float] = mapped_column(Float, default=0.0)
    latency_s: Mapped[float] = mapped_column(Float, default=0.0)
    outcome: Mapped[str] = mapped_column(String(32), default="")
    prompt_path: Mapped[str] = mapped_column(Text, default="")
    response_path: Mapped[str] = mapped_column(Text, default="")
    created: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)


class RunAgent(Base):
    """A process searching a run, and the nodes of the run's budget its steps in flight have claimed: the budget
    is shared by every process on the run (kernelevolve/store/agents.py, docs/cli.md)."""

    __tablename__ = "run_agents"

    run_id: Mapped[str] = mapped_column(ForeignKey("runs.id"), primary_key=True)
    agent: Mapped[str] = mapped_column(String(96), primary_key=True)  # host:pid:random
    inflight: Mapped[int] = mapped_column(Integer, default=0)  # budgeted nodes its steps hold
    llm_seq: Mapped[int] = mapped_column(Integer, default=0)  # the last LLM call number it took
    heartbeat: Mapped[float] = mapped_column(Float, default=0.0)  # time.time() of its last word; a lease


class Artifact(Base):
    """A file of the object store (a kernel, a result, a log, a prompt, a response, the run's problem), kept in the
    database beside the file, so that a process on another machine reads it with no shared runs directory
    (kernelevolve/store/artifacts.py, docs/cli.md)."""

    __tablename__ = "artifacts"

    path: Mapped[str] = mapped_column(String(512), primary_key=True)  # relative to the runs directory
    text: Mapped[str] = mapped_column(Text)
