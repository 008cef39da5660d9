"""Replay: serve the responses recorded in an earlier run, in the order they were asked for.

Each served response carries the parents its node was built on in the recorded run, so the driver can
rebuild the same graph without asking the strategy (whose choices depend on re-measured timings).
"""

from __future__ import annotations

import threading

from kernelevolve.llm.base import LLMClient, LLMError, LLMResponse, Message


class ReplayClient(LLMClient):
    provider = "replay"

    def __init__(self, store, run_id: str):
        super().__init__(run_id)
        run = store.get_run(run_id)
        if run is None:
            raise LLMError(f"replay: no run {run_id!r} in {store.url}")
        self.calls = store.llm_calls(run.id)
        self.model = run.id
        self._next = 0
        self._lock = threading.Lock()
        self._store = store

    def seed_node(self) -> int | None:
        """The recorded run's seed node, which the replaying run's seed stands in for."""
        return next((n.id for n in self._store.nodes(self.model) if n.operator == "seed"), None)

    def remaining(self) -> int:
        return len(self.calls) - self._next

    def peek_parents(self) -> list[int] | None:
        """The recorded parents of the next response (None when the recording is exhausted)."""
        with self._lock:
            return self.calls[self._next]["parents"] if self._next < len(self.calls) else None

    def complete(self, messages: list[Message], *, max_tokens: int = 8192, temperature: float = 0.7) -> LLMResponse:
        with self._lock:
            if self._next >= len(self.calls):
                raise LLMError(f"replay: the recording of run {self.model} has no more responses")
            call = self.calls[self._next]
            self._next += 1
        text = self._store.path(call["response_path"]).read_text() if call["response_path"] else ""
        if call["outcome"] == "error":
            raise LLMError(f"replay: recorded failure: {text}")
        return LLMResponse(
            text=text,
            model=f"replay:{self.model}",
            prompt_tokens=call["prompt_tokens"],
            completion_tokens=call["completion_tokens"],
            extra={"parents": call["parents"], "node_id": call["node_id"]},
        )
