"""The client interface every provider implements, and what one call returns."""

from __future__ import annotations

from dataclasses import dataclass, field


class LLMError(Exception):
    """A call failed after its retries (unreachable server, bad key, timeout): the step is recorded as failed."""


@dataclass
class Message:
    role: str  # "system" | "user" | "assistant"
    content: str


@dataclass
class LLMResponse:
    text: str
    model: str
    prompt_tokens: int = 0
    completion_tokens: int = 0
    latency_s: float = 0.0
    cost: float = 0.0
    extra: dict = field(default_factory=dict)  # replay: the recorded parents


class LLMClient:
    """One model at one endpoint. `complete` blocks; the driver runs it in a thread."""

    provider = "base"

    def __init__(self, model: str):
        self.model = model

    @property
    def name(self) -> str:
        return f"{self.provider}:{self.model}"

    def check_key(self) -> str:
        """The API key calls will use; LLMError naming what to set where one is needed and missing."""
        return ""

    def complete(self, messages: list[Message], *, max_tokens: int = 8192, temperature: float = 0.7) -> LLMResponse:
        raise NotImplementedError
