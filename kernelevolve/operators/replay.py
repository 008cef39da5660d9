"""Replay: a recorded run's LLM steps served again, on the same parents, with no model.

The recorded responses go through the universal operator as a model's would (edits applied to the same parent
source), and each step is asked on the parents the recorded step had. Recorded node ids are mapped to this run's
nodes by source hash, so a replay rebuilds the graph without asking the strategy, whose choices depend on
re-measured timings.
"""

from __future__ import annotations

import random

from kernelevolve.llm.base import Message
from kernelevolve.llm.registry import Ensemble
from kernelevolve.llm.replay import Recorded, RecordedClient
from kernelevolve.operators.base import Proposal, Request
from kernelevolve.operators.universal import UniversalOperator
from kernelevolve.platforms.base import Platform
from kernelevolve.problem.problem import Problem
from kernelevolve.result import EvalResult
from kernelevolve.store.store import Store, StoreError


class ReplayOperator:
    name = "replay"

    def __init__(self, store: Store, run_id: str, problem: Problem, platform: Platform):
        run = store.get_run(run_id)
        if run is None:
            raise StoreError(f"replay: no run {run_id!r} in {store.shown_url()}; `kernelevolve runs` lists them")
        self.run_id = run.id
        self.calls = store.llm_calls(run.id)
        self.hashes = {n.id: n.source_hash for n in store.nodes(run.id)}  # recorded node id -> its kernel
        responses = [
            Recorded(
                store.read(c["response_path"]) if c["response_path"] else "",
                failed=c["outcome"] == "error",
                prompt_tokens=c["prompt_tokens"],
                completion_tokens=c["completion_tokens"],
            )
            for c in self.calls
        ]
        self.client = RecordedClient(run.id, responses)
        self.inner = UniversalOperator(Ensemble([(self.client, 1.0)], random.Random(0)), problem, platform)

    @property
    def cost(self) -> float:
        return self.inner.cost

    def next_parents(self, by_hash: dict[str, int]) -> list[int] | None:
        """The next recorded step's parents as this run's node ids (by_hash: this run's nodes by source hash);
        [] for a draft, None when every recorded response has been served."""
        served = self.client.served
        if served >= len(self.calls):
            return None
        recorded = self.calls[served]["parents"]
        mapped = [by_hash[self.hashes[p]] for p in recorded if self.hashes.get(p) in by_hash]
        if recorded and not mapped:  # the recorded parent has no counterpart here: the first node stands in
            mapped = [min(by_hash.values())] if by_hash else []
        return mapped

    def messages_for(self, request: Request) -> list[Message]:
        return self.inner.messages_for(request)

    def propose(self, request: Request) -> Proposal:
        return self.inner.propose(request)

    def feedback(self, proposal: Proposal, result: EvalResult | None) -> None:
        self.inner.feedback(proposal, result)

    def stop_reason(self) -> str:
        if self.client.served >= len(self.calls):
            return "replay: every recorded response has been served"
        return self.inner.stop_reason()
