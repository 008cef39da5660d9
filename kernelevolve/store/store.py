"""The store: relational metadata (SQLAlchemy) plus the object store (files under the runs directory).

Persistence before progress: a node, its edges, its evaluation and the strategy's state are committed in
one transaction as soon as the evaluation finishes; the search acts on a result only after that.
"""

from __future__ import annotations

import errno
import json
import os
import secrets
import shutil
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any
from urllib.parse import quote

from sqlalchemy import create_engine, delete, event, func, inspect, make_url, select, update
from sqlalchemy.exc import ArgumentError, OperationalError, SQLAlchemyError
from sqlalchemy.orm import Session, selectinload, sessionmaker

from kernelevolve.result import MACHINE_STATUSES, EvalResult
from kernelevolve.store import artifacts
from kernelevolve.store.locking import lock_run, release_claim
from kernelevolve.store.models import Artifact, Base, Edge, Evaluation, LLMCall, Node, NodeAnalysis, Run, RunAgent

DB_NAME = "kernelevolve.db"

# The package a database URL's driver comes from, by the module SQLAlchemy failed to import.
DRIVER_PACKAGES = {"psycopg": "psycopg[binary]", "psycopg2": "psycopg2-binary", "MySQLdb": "mysqlclient"}


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
    outcome: str = ""  # ok | error | unusable | duplicate | evaluated | pending
    knowledge: list[str] = field(default_factory=list)  # documents the prompt carried: kept for a pending call


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
    """The store in a runs directory (or at a database URL). A runs directory the user cannot write, or a
    database file there that is read-only, is opened read-only: it can be listed and shown, and every write raises
    StoreError saying so (`read_only` says why). `read_only=True` asks for that on any store (a viewer such as
    `serve` beside a running search): nothing is created, neither the folder, the schema nor a journal mode."""

    def __init__(self, runs_dir: str | Path, url: str | None = None, *, read_only: bool = False):
        self.runs_dir = Path(runs_dir)
        if read_only:
            self._open_for_reading(url)
            return
        if not os.path.isdir(self.runs_dir):  # False, not an error, under a folder that cannot be read
            try:
                self.runs_dir.mkdir(parents=True, exist_ok=True)
            except OSError as e:
                raise StoreError(f"cannot create the runs directory {self.runs_dir}: {_os_reason(e)}") from None
        if not os.access(self.runs_dir, os.R_OK | os.X_OK):
            raise StoreError(
                f"cannot read the runs directory {self.runs_dir}: permission denied; pass a --runs-dir you can read"
            )
        db_file = (self.runs_dir / DB_NAME).resolve()
        self.read_only = "" if url else _read_only_reason(self.runs_dir, db_file)
        self.url = url or f"sqlite:///{db_file}"
        try:
            if self.read_only:
                self.engine = _open_sqlite_read_only(self.runs_dir, db_file)
            else:
                self.engine = create_engine(_engine_url(self.url))
                if self.engine.dialect.name == "sqlite":
                    event.listen(self.engine, "connect", _sqlite_pragmas)
                Base.metadata.create_all(self.engine)
                for index in Node.__table__.indexes:  # a store made before an index existed gets it
                    index.create(self.engine, checkfirst=True)
        except (ImportError, SQLAlchemyError) as e:
            raise self._open_error(e) from None
        self.session = sessionmaker(self.engine, expire_on_commit=False)

    def _open_for_reading(self, url: str | None) -> None:
        """Open an existing store without writing anything to it; StoreError where there is none to read."""
        if not os.path.isdir(self.runs_dir):
            raise StoreError(f"no runs directory {self.runs_dir}: pass the --runs-dir your runs are in")
        if not os.access(self.runs_dir, os.R_OK | os.X_OK):
            raise StoreError(
                f"cannot read the runs directory {self.runs_dir}: permission denied; pass a --runs-dir you can read"
            )
        db_file = (self.runs_dir / DB_NAME).resolve()
        self.read_only = "opened read-only"
        self.url = url or f"sqlite:///{db_file}"
        try:
            if url is None:
                if not db_file.exists():
                    raise StoreError(
                        f"the runs directory {self.runs_dir} holds no store ({DB_NAME}): pass the --runs-dir your "
                        "runs are in (or --db URL)"
                    )
                self.engine = _open_sqlite_read_only(self.runs_dir, db_file)
            else:
                self.engine = create_engine(_engine_url(url))
                if self.engine.dialect.name == "postgresql":
                    event.listen(self.engine, "connect", _postgresql_read_only)
                elif self.engine.dialect.name == "sqlite":
                    event.listen(self.engine, "connect", _sqlite_query_only)
                if not inspect(self.engine).has_table(Run.__tablename__):
                    raise StoreError(f"the database at {self.shown_url()} holds no store (no runs table)")
        except (ImportError, SQLAlchemyError) as e:
            raise self._open_error(e) from None
        self.session = sessionmaker(self.engine, expire_on_commit=False)

    def _open_error(self, e: ImportError | SQLAlchemyError) -> StoreError:
        if isinstance(e, ImportError):  # the URL's database driver is not installed (psycopg for postgresql://)
            package = DRIVER_PACKAGES.get(e.name or "", e.name)
            return StoreError(
                f"the store URL {self.shown_url()} needs the Python package {package!r}, which is not installed: "
                f'pip install "{package}"'
            )
        return StoreError(f"cannot open the store at {self.shown_url()}: {_db_reason(e)}")

    def shown_url(self) -> str:
        """The URL without its password, for messages."""
        try:
            return make_url(self.url).render_as_string(hide_password=True)
        except SQLAlchemyError:
            return self.url

    @property
    def single_writer(self) -> bool:
        """SQLite: one process writes a run at a time (search/run_lock.py); PostgreSQL takes several
        (store/agents.py)."""
        return self.engine.dialect.name == "sqlite"

    def _check_writable(self) -> None:
        if self.read_only:
            raise StoreError(
                f"the store in {self.runs_dir} is read-only ({self.read_only}): its runs can be listed and shown, "
                "not written; pass a writable --runs-dir (or copy this one somewhere writable)"
            )

    @contextmanager
    def writing(self, what: str) -> Iterator[Session]:
        """A transaction that writes: refused on a read-only store; a full disk or a database that refuses the
        write (SQLAlchemy's OperationalError) becomes a StoreError naming what was being written."""
        self._check_writable()
        try:
            with self.session() as s, s.begin():
                yield s
        except OperationalError as e:
            raise StoreError(f"cannot write {what} to the store at {self.shown_url()}: {_db_reason(e)}") from None

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
        with self.writing("the new run") as s:
            s.add(run)
        try:
            (self.runs_dir / run.id).mkdir(exist_ok=True)
        except OSError as e:
            raise StoreError(f"cannot create the run's folder {self.runs_dir / run.id}: {_os_reason(e)}") from None
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
        with self.writing(f"run {run_id}") as s:
            run = s.get(Run, run_id)
            for k, v in fields.items():
                setattr(run, k, v)

    def delete_run(self, run_id: str) -> dict[str, Any]:
        """Delete a run: its nodes, edges, evaluations, analyses, LLM calls and row, then its folder. Nodes of other
        runs that reused one of its evaluations keep their own copy of it (their evaluation row and files): their
        `reused_from` is cleared, so they serve later dedup in its place. Refused (StoreError, nothing deleted)
        where another run's node descends from one of its nodes. Returns what was deleted."""
        folder = self.runs_dir / run_id
        with self.writing(f"the deletion of run {run_id}") as s:
            if s.get(Run, run_id) is None:
                raise StoreError(f"no run {run_id!r} in {self.shown_url()}")
            ids = select(Node.id).where(Node.run_id == run_id)
            children = s.scalar(
                select(func.count())
                .select_from(Edge)
                .join(Node, Node.id == Edge.child_id)
                .where(Edge.parent_id.in_(ids), Node.run_id != run_id)
            )
            if children:
                raise StoreError(f"run {run_id}: {children} node(s) of other runs descend from its nodes; not deleted")
            nodes = s.scalar(select(func.count()).select_from(Node).where(Node.run_id == run_id))
            cleared = s.execute(
                update(Node).where(Node.run_id != run_id, Node.reused_from.in_(ids)).values(reused_from=None)
            ).rowcount
            s.execute(update(LLMCall).where(LLMCall.run_id != run_id, LLMCall.node_id.in_(ids)).values(node_id=None))
            calls = s.execute(delete(LLMCall).where(LLMCall.run_id == run_id)).rowcount
            s.execute(delete(NodeAnalysis).where(NodeAnalysis.node_id.in_(ids)))
            s.execute(delete(Evaluation).where(Evaluation.node_id.in_(ids)))
            s.execute(delete(Edge).where(Edge.child_id.in_(ids)))
            s.execute(delete(Node).where(Node.run_id == run_id))
            s.execute(delete(RunAgent).where(RunAgent.run_id == run_id))
            s.execute(delete(Artifact).where(Artifact.path.startswith(f"{run_id}/", autoescape=True)))
            s.execute(delete(Run).where(Run.id == run_id))
        removed = None
        if folder.is_dir():
            try:
                shutil.rmtree(folder)
            except OSError as e:
                raise StoreError(f"deleted run {run_id}'s records but could not remove {folder}: {e}") from e
            removed = folder
        return {"nodes": nodes, "llm_calls": calls, "reused_cleared": cleared, "folder": removed}

    # ---- nodes ----

    def nodes(self, run_id: str) -> list[Node]:
        with self.session() as s:
            return list(
                s.scalars(
                    select(Node).where(Node.run_id == run_id).options(selectinload(Node.parents)).order_by(Node.step)
                ).all()
            )

    def nodes_after(self, run_id: str, node_id: int) -> list[Node]:
        """The run's nodes stored after that one (by id): what other processes on the run added since."""
        query = select(Node).where(Node.run_id == run_id, Node.id > node_id).options(selectinload(Node.parents))
        with self.session() as s:
            return list(s.scalars(query.order_by(Node.id)).all())

    def node(self, node_id: int) -> Node | None:
        with self.session() as s:
            return s.scalars(select(Node).where(Node.id == node_id).options(selectinload(Node.parents))).first()

    def node_by_step(self, run_id: str, step: int) -> Node | None:
        """A node by its number within its run (the number users see)."""
        with self.session() as s:
            return s.scalars(
                select(Node).where(Node.run_id == run_id, Node.step == step).options(selectinload(Node.parents))
            ).first()

    def source(self, node_id: int) -> str:
        """A node's kernel, from the object store."""
        node = self.node(node_id)
        if node is None:
            raise StoreError(f"no node {node_id} in {self.shown_url()}")
        try:
            return self.read(node.kernel_path)
        except OSError as e:
            raise StoreError(f"cannot read node {node.step}'s kernel {node.kernel_path}: {_os_reason(e)}") from None

    def has_source(self, run_id: str, source_hash: str) -> bool:
        with self.session() as s:
            return (
                s.scalar(select(func.count(Node.id)).where(Node.run_id == run_id, Node.source_hash == source_hash)) > 0
            )

    def find_evaluated(
        self,
        problem_hash: str,
        platform: str,
        source_hash: str,
        same: Callable[[EvalResult], bool] | None = None,
    ) -> tuple[Node, EvalResult] | None:
        """An evaluation of this exact source on this problem and platform in any run (never evaluate twice).

        A `timeout`, `crashed` or `harness_limit` result (MACHINE_STATUSES) says as much about the machine and the
        limits it ran under (a small --timeout, a busy host, memory) as about the kernel: it is never reused, the
        source is evaluated again. same: which stored results count (eval/environment.py: this harness, torch,
        Triton and device); the oldest that does is returned."""
        with self.session() as s:
            rows = s.execute(
                select(Node, Evaluation)
                .join(Run, Run.id == Node.run_id)
                .join(Evaluation, Evaluation.node_id == Node.id)
                .where(
                    Run.problem_hash == problem_hash,
                    Run.platform == platform,
                    Node.source_hash == source_hash,
                    Node.reused_from.is_(None),
                    Node.status.not_in([s.value for s in MACHINE_STATUSES]),
                )
                .order_by(Node.id)
            ).all()
            for node, evaluation in rows:
                result = EvalResult.model_validate_json(evaluation.result)
                if same is None or same(result):
                    return node, result
            return None

    def replace_result(self, node_id: int, result: EvalResult, wall_s: float = 0.0) -> None:
        """A node's evaluation done again (a root that had timed out or crashed, resumed under other limits): its
        status, fitness and stored result become the new evaluation's, in one transaction."""
        with self.writing(f"the new evaluation of node {node_id}") as s:
            node = s.get(Node, node_id)
            folder = Path(node.kernel_path).parent
            self._put_files(s, _result_files(folder, result))
            node.status, node.correct = result.status.value, result.correct
            node.fitness, node.speedup, node.reason = result.fitness, result.speedup, result.reason[:2000]
            ev = s.scalars(select(Evaluation).where(Evaluation.node_id == node_id)).first()
            ev.result, ev.wall_s = result.model_dump_json(), wall_s

    def evaluations(self, run_id: str, *, correct_only: bool = False) -> dict[int, EvalResult]:
        """The run's stored evaluations by node id, in one query (a report reads them all)."""
        query = select(Evaluation.node_id, Evaluation.result).join(Node, Node.id == Evaluation.node_id)
        query = query.where(Node.run_id == run_id, *([Node.correct.is_(True)] if correct_only else []))
        with self.session() as s:
            rows = s.execute(query.order_by(Evaluation.id)).all()
        return {node_id: EvalResult.model_validate_json(result) for node_id, result in rows}

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
        claimed_by: str | None = None,
    ) -> Node | None:
        """Write the artifacts, then commit node, edges, evaluation, strategy state and MCTS statistics at once,
        with the run's row held (its next step number is this node's) and the claim of agent `claimed_by` given
        back. None, nothing stored but the claim given back: another process on the run stored this kernel first."""
        self._check_writable()
        files = self._write_artifacts(run_id, record)
        kernel_rel, result_rel, log_rel = list(files)
        result = record.result
        with self.writing(f"a node of run {run_id}") as s:
            run = lock_run(s, run_id)
            if claimed_by is not None:
                release_claim(s, run_id, claimed_by)
            twin = select(Node.id).where(Node.run_id == run_id, Node.source_hash == record.source_hash)
            if s.scalar(twin) is not None:
                return None
            artifacts.keep(s, files)
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
                _drop_pending(s, run_id, record.llm_call.seq)
                s.add(self._llm_row(s, run_id, record.llm_call, node.id))
            if record.analysis is not None:
                s.add(NodeAnalysis(node_id=node.id, data=json.dumps({**record.analysis, "node_id": node.id})))
            run.strategy_state = json.dumps(strategy_state, sort_keys=True)
            if elapsed_s is not None:
                run.elapsed_s = elapsed_s
        return node

    def analysis(self, node_id: int) -> dict[str, Any] | None:
        with self.session() as s:
            row = s.get(NodeAnalysis, node_id)
            return json.loads(row.data) if row else None

    def add_llm_call(self, run_id: str, call: LLMCallRecord, claimed_by: str | None = None) -> None:
        """A call that produced no node (failed, unusable or duplicate response, or pending: a deferred model has
        its prompt), recorded on its own, with the claim of agent `claimed_by` given back. A call answered after
        it was pending replaces its pending row."""
        with self.writing(f"an LLM call of run {run_id}") as s:
            if claimed_by is not None:
                lock_run(s, run_id)
                release_claim(s, run_id, claimed_by)
            _drop_pending(s, run_id, call.seq)
            s.add(self._llm_row(s, run_id, call, None))

    def pending_calls(self, run_id: str) -> list[dict[str, Any]]:
        """The run's calls a deferred model has not answered yet, oldest first, each with the prompt it was sent."""
        with self.session() as s:
            rows = s.scalars(
                select(LLMCall).where(LLMCall.run_id == run_id, LLMCall.outcome == "pending").order_by(LLMCall.seq)
            ).all()
            calls = [_llm_dict(r) for r in rows]
        for c in calls:
            try:
                c["prompt"] = self.read(c["prompt_path"])
            except OSError as e:
                raise StoreError(f"the prompt of pending call {c['seq']} of run {run_id} is unreadable: {e}") from None
            try:
                c["knowledge"] = json.loads(self.read(f"{run_id}/llm/{c['seq']:05d}-knowledge.json"))
            except (OSError, ValueError):
                c["knowledge"] = []  # a record of retrieval (none kept, or unreadable), not needed to serve the call
        return calls

    def _llm_row(self, s: Session, run_id: str, call: LLMCallRecord, node_id: int | None) -> LLMCall:
        """The call's row; its prompt and response (and, pending, the knowledge it was given) kept as files."""
        rel = Path(run_id) / "llm"
        files = {
            str(rel / f"{call.seq:05d}-prompt.md"): call.prompt,
            str(rel / f"{call.seq:05d}-response.md"): call.response,
        }
        if call.outcome == "pending" and call.knowledge:  # its node, made in a later session, records them
            files[str(rel / f"{call.seq:05d}-knowledge.json")] = json.dumps(call.knowledge)
        self._put_files(s, files, "the LLM transcript")
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
            return [_llm_dict(r) for r in rows]

    def llm_call_of(self, node_id: int) -> dict[str, Any] | None:
        """The LLM call that produced this node (as llm_calls gives it), or None (not an LLM node)."""
        with self.session() as s:
            row = s.scalars(select(LLMCall).where(LLMCall.node_id == node_id).order_by(LLMCall.seq)).first()
            return _llm_dict(row) if row else None

    def llm_usage(self, run_id: str) -> dict[str, dict[str, float]]:
        """Per model: calls, tokens, cost, latency."""
        usage: dict[str, dict[str, float]] = {}
        for c in self.llm_calls(run_id):
            if c["outcome"] == "pending":  # not answered yet: no tokens, no cost
                continue
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

    def _write_artifacts(self, run_id: str, record: NodeRecord) -> dict[str, str]:
        """The node's files (kernel, result, log, in that order), named by source hash: rewriting after a crash
        before the commit is harmless. Their rows go in with the node (`artifacts.keep`)."""
        folder = Path(run_id) / "nodes" / record.source_hash
        files = {str(folder / "kernel.py"): record.source, **_result_files(folder, record.result)}
        self._write_files(files)
        return files

    def _write_files(self, files: dict[str, str], what: str = "artifacts") -> None:
        try:
            artifacts.write_files(self.runs_dir, files)
        except OSError as e:
            where = self.runs_dir / Path(next(iter(files))).parent
            raise StoreError(f"cannot write {what} under {where}: {_os_reason(e)}") from None

    def _put_files(self, s: Session, files: dict[str, str], what: str = "artifacts") -> None:
        """Files and their rows, in the transaction s."""
        self._write_files(files, what)
        artifacts.keep(s, files)

    def put(self, relative: str, text: str) -> None:
        """One file of the object store, kept as a file and as a row (a run's problem, its best kernel's figures)."""
        with self.writing(relative) as s:
            self._put_files(s, {relative: text})

    def read(self, relative: str) -> str:
        """A file of the object store: from the runs directory, or from the database where this machine has no
        such file (another machine's process wrote it: store/artifacts.py). FileNotFoundError where neither."""
        with self.session() as s:
            return artifacts.read(s, self.runs_dir, relative, materialize=not self.read_only)

    def path(self, relative: str) -> Path:
        return self.runs_dir / relative


def _result_files(folder: Path, result: EvalResult) -> dict[str, str]:
    return {
        str(folder / "result.json"): result.model_dump_json(indent=1, exclude={"log_tail"}),
        str(folder / "log.txt"): result.log_tail,
    }


def _engine_url(url: str) -> Any:
    """postgresql:// means psycopg 3 (the `postgres` extra), whichever driver this SQLAlchemy defaults to."""
    try:
        parsed = make_url(url)
    except ArgumentError:
        return url  # create_engine says what is wrong with it
    return parsed.set(drivername="postgresql+psycopg") if parsed.drivername == "postgresql" else parsed


def _drop_pending(s: Any, run_id: str, seq: int) -> None:
    s.execute(delete(LLMCall).where(LLMCall.run_id == run_id, LLMCall.seq == seq, LLMCall.outcome == "pending"))


def _llm_dict(r: LLMCall) -> dict[str, Any]:
    return {
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


AGAIN = "free some space and run the command again (a search resumes where it stopped)"


def _os_reason(e: OSError) -> str:
    """What an OSError means for the user, and what to do."""
    if e.errno in (errno.ENOSPC, errno.EDQUOT):
        return f"the disk is full (no space left on device); {AGAIN}"
    if e.errno == errno.EROFS:
        return "the file system is read-only; pass a writable --runs-dir"
    if e.errno in (errno.EACCES, errno.EPERM):
        return "permission denied; pass a --runs-dir you can write"
    return f"{(e.strerror or str(e)).lower()}; pass another --runs-dir"


def _db_reason(e: SQLAlchemyError) -> str:
    """The database's own words, without SQLAlchemy's statement dump and link to its documentation."""
    lines = str(getattr(e, "orig", None) or e).strip().splitlines()
    reason = lines[0] if lines else type(e).__name__
    if "disk is full" in reason:
        return f"{reason}; {AGAIN}"
    if "readonly database" in reason:
        return f"{reason}; pass a writable --runs-dir"
    if "unable to open database file" in reason:
        return f"{reason}; check that the runs directory and its {DB_NAME} can be read and written"
    return reason


def _read_only_reason(runs_dir: Path, db_file: Path) -> str:
    """Why the store in runs_dir can only be read; empty when it can be written."""
    if not os.access(runs_dir, os.W_OK):
        return f"{runs_dir} is not writable"
    if db_file.exists() and not os.access(db_file, os.W_OK):
        return f"{db_file.name} is not writable"
    return ""


def _open_sqlite_read_only(runs_dir: Path, db_file: Path) -> Any:
    """An engine that only reads the existing SQLite store: no schema created, no journal mode set. A store in WAL
    mode needs its -shm file to be read; where that cannot be created (a read-only folder) and no -wal file holds
    uncommitted pages, the file is read as immutable."""
    if not db_file.exists():
        raise StoreError(
            f"the runs directory {runs_dir} is read-only and holds no store ({DB_NAME}); pass another --runs-dir"
        )
    for mode in ("mode=ro", "immutable=1"):
        engine = create_engine(f"sqlite:///file:{quote(str(db_file))}?{mode}&uri=true")
        event.listen(engine, "connect", _sqlite_read_pragmas)
        try:
            with engine.connect() as c:
                c.exec_driver_sql("SELECT count(*) FROM sqlite_master").scalar()
            return engine
        except OperationalError:
            engine.dispose()
            if mode == "immutable=1" or db_file.with_name(db_file.name + "-wal").exists():
                raise
    raise AssertionError("unreachable")


def _postgresql_read_only(dbapi_connection: Any, _record: Any) -> None:
    """Every transaction of the connection read-only: the server refuses a write, whatever the code does."""
    cursor = dbapi_connection.cursor()
    cursor.execute("SET SESSION CHARACTERISTICS AS TRANSACTION READ ONLY")
    cursor.close()
    dbapi_connection.commit()


def _sqlite_query_only(dbapi_connection: Any, _record: Any) -> None:
    """A SQLite store given by URL, opened for reading: the connection refuses every write."""
    cursor = dbapi_connection.cursor()
    cursor.execute("PRAGMA busy_timeout=30000")
    cursor.execute("PRAGMA query_only=ON")
    cursor.close()


def _sqlite_read_pragmas(dbapi_connection: Any, _record: Any) -> None:
    cursor = dbapi_connection.cursor()
    cursor.execute("PRAGMA busy_timeout=30000")
    cursor.close()


def _sqlite_pragmas(dbapi_connection: Any, _record: Any) -> None:
    cursor = dbapi_connection.cursor()
    cursor.execute("PRAGMA journal_mode=WAL")
    cursor.execute("PRAGMA synchronous=NORMAL")
    cursor.execute("PRAGMA busy_timeout=30000")
    cursor.execute("PRAGMA foreign_keys=ON")
    cursor.close()
