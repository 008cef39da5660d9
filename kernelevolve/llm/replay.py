"""A client that answers with recorded responses, in order: replay without a model.

It knows nothing of the store: `operators/replay.py` reads a recorded run and hands it the responses.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass

from kernelevolve.llm.base import LLMClient, LLMError, LLMResponse, Message


@dataclass
class Recorded:
    text: str
    failed: bool = False  # the recorded call reached no model: replayed as the same failure
    prompt_tokens: int = 0
    completion_tokens: int = 0


class RecordedClient(LLMClient):
    provider = "replay"

    def __init__(self, name: str, responses: list[Recorded]):
        super().__init__(name)
        self.responses = responses
        self.served = 0
        self._lock = threading.Lock()

    def complete(
        self, messages: list[Message], *, max_tokens: int = 8192, temperature: float = 0.7, name: str = ""
    ) -> LLMResponse:
        with self._lock:
            if self.served >= len(self.responses):
                raise LLMError(f"replay: the recording of {self.model} has no more responses")
            r = self.responses[self.served]
            self.served += 1
        if r.failed:
            raise LLMError(f"replay: recorded failure: {r.text}")
        return LLMResponse(
            text=r.text,
            model=self.name,
            prompt_tokens=r.prompt_tokens,
            completion_tokens=r.completion_tokens,
        )
