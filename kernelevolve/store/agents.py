"""Several processes searching one run (a PostgreSQL store, `optimize --join`): each is an agent with a lease on
the run, and every step claims one of the run's budgeted nodes before it starts, in a transaction that holds the
run's row, so the processes together store exactly the budget and never two nodes under one number. SQLite keeps
one searching process per run (search/run_lock.py); the same claims run there, with one agent.

docs/cli.md ("Several processes on one run") says what a user types and what is shared.
"""

from __future__ import annotations

import os
import secrets
import socket
import time
from typing import Any, Literal

from sqlalchemy import delete, func, select, update

from kernelevolve.store.locking import lock_run, release_claim
from kernelevolve.store.models import LLMCall, Node, RunAgent
from kernelevolve.store.store import Store

# An agent not heard from for this long is gone (killed, its machine lost): its claims stop counting.
LEASE_S = 120.0

Claim = Literal["granted", "spent", "wait"]  # wait: the budget left is claimed by other agents' steps in flight


class Agent:
    """This process on a run: its lease, its claims on the budget, the LLM call numbers it takes."""

    def __init__(self, store: Store, run_id: str):
        self.store = store
        self.run_id = run_id
        self.id = f"{socket.gethostname()[:60]}:{os.getpid()}:{secrets.token_hex(3)}"

    def join(self) -> None:
        """The lease taken. A single-writer store (SQLite) has no other process on the run: rows left by a killed
        one are dropped, so its claims do not hold a resumed run back."""
        with self.store.writing(f"the lease on run {self.run_id}") as s:
            if self.store.single_writer:
                s.execute(delete(RunAgent).where(RunAgent.run_id == self.run_id))
            s.add(RunAgent(run_id=self.run_id, agent=self.id, inflight=0, llm_seq=0, heartbeat=time.time()))

    def claim(self, budget: int) -> Claim:
        """One node of the budget for a step about to start: granted while the stored nodes, the calls waiting for
        a deferred model and the live agents' claims leave room; spent once stored nodes and waiting calls fill
        the budget; wait while other agents' steps in flight hold what is left (they may end without a node)."""
        now = time.time()
        with self.store.writing(f"a claim on run {self.run_id}'s budget") as s:
            lock_run(s, self.run_id)
            done = s.scalar(select(func.count()).select_from(Node).where(Node.run_id == self.run_id)) or 0
            waiting = s.scalar(
                select(func.count())
                .select_from(LLMCall)
                .where(LLMCall.run_id == self.run_id, LLMCall.outcome == "pending")
            )
            held = s.scalar(
                select(func.coalesce(func.sum(RunAgent.inflight), 0)).where(
                    RunAgent.run_id == self.run_id, (RunAgent.heartbeat >= now - LEASE_S) | (RunAgent.agent == self.id)
                )
            )
            if done + (waiting or 0) >= budget:
                return "spent"
            if done + (waiting or 0) + held >= budget:
                self._touch(s, now)
                return "wait"
            s.execute(
                update(RunAgent)
                .where(RunAgent.run_id == self.run_id, RunAgent.agent == self.id)
                .values(inflight=RunAgent.inflight + 1, heartbeat=now)
            )
            return "granted"

    def release(self) -> None:
        """A claim given back by a step that ended with nothing to store."""
        with self.store.writing(f"a claim on run {self.run_id}'s budget") as s:
            release_claim(s, self.run_id, self.id)

    def next_llm_seq(self) -> int:
        """The next LLM call number of the run, unique over its agents (its transcripts are named by it)."""
        with self.store.writing(f"an LLM call number of run {self.run_id}") as s:
            lock_run(s, self.run_id)
            stored = s.scalar(select(func.max(LLMCall.seq)).where(LLMCall.run_id == self.run_id)) or 0
            taken = s.scalar(select(func.max(RunAgent.llm_seq)).where(RunAgent.run_id == self.run_id)) or 0
            seq = max(stored, taken) + 1
            s.execute(
                update(RunAgent)
                .where(RunAgent.run_id == self.run_id, RunAgent.agent == self.id)
                .values(llm_seq=seq, heartbeat=time.time())
            )
            return seq

    def touch(self) -> None:
        """The lease renewed (the driver does so at least every heartbeat while it searches)."""
        with self.store.writing(f"the lease on run {self.run_id}") as s:
            self._touch(s, time.time())

    def _touch(self, s: Any, now: float) -> None:
        s.execute(
            update(RunAgent).where(RunAgent.run_id == self.run_id, RunAgent.agent == self.id).values(heartbeat=now)
        )

    def leave(self) -> int:
        """The lease and its claims given up (the search stopped, or was interrupted); returns how many other agents
        search the run still (their lease alive): the last to leave says the run is done."""
        with self.store.writing(f"the lease on run {self.run_id}") as s:
            s.execute(delete(RunAgent).where(RunAgent.run_id == self.run_id, RunAgent.agent == self.id))
            alive = RunAgent.heartbeat >= time.time() - LEASE_S
            return s.scalar(select(func.count()).select_from(RunAgent).where(RunAgent.run_id == self.run_id, alive))
