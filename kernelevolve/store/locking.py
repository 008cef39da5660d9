"""The two statements a write shares with the claims of processes searching one run (store/agents.py): the run's
row locked, and a claim given back, each in the caller's transaction."""

from __future__ import annotations

import time
from typing import Any

from sqlalchemy import select, update

from kernelevolve.store.models import Run, RunAgent


def lock_run(s: Any, run_id: str) -> Run | None:
    """The run's row, locked until the transaction ends (SELECT ... FOR UPDATE on PostgreSQL; SQLite has one writer
    and ignores it): claims and node numbers of the run are taken one process at a time."""
    return s.scalars(select(Run).where(Run.id == run_id).with_for_update()).first()


def release_claim(s: Any, run_id: str, agent: str) -> None:
    """One claim of the agent given back, in the caller's transaction (with the node or call that settles it)."""
    s.execute(
        update(RunAgent)
        .where(RunAgent.run_id == run_id, RunAgent.agent == agent, RunAgent.inflight > 0)
        .values(inflight=RunAgent.inflight - 1, heartbeat=time.time())
    )
