"""The client interface every provider implements, and what one call returns."""

from __future__ import annotations

from dataclasses import dataclass, field


class LLMError(Exception):
    """A call failed after its retries (unreachable server, bad key, timeout): the step is recorded as failed."""


class LLMPending(Exception):
    """A deferred client took the prompt but has no answer yet (an inbox file not written, a batch not finished):
    the call is stored as pending and served when a later session of the run finds its answer."""

    def __init__(self, name: str, where: str):
        super().__init__(f"call {name}: no answer yet ({where})")
        self.name, self.where = name, where


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
    deferred = False  # DeferredClient: an answer may come in a later session (LLMPending until then)

    def __init__(self, model: str):
        self.model = model

    @property
    def name(self) -> str:
        return f"{self.provider}:{self.model}"

    def check_key(self) -> str:
        """The API key calls will use; LLMError naming what to set where one is needed and missing."""
        return ""

    def complete(
        self, messages: list[Message], *, max_tokens: int = 8192, temperature: float = 0.7, name: str = ""
    ) -> LLMResponse:
        """name: the call's name within the run (`<problem>-<run>-<seq>`), which deferred clients key on."""
        raise NotImplementedError


class DeferredClient(LLMClient):
    """A client whose answers may come later than the call: each call has a name that stays the same across
    sessions of a run, so a later session collects the answer of a call an earlier one made."""

    deferred = True

    def submit(self, name: str, messages: list[Message], *, max_tokens: int = 8192, temperature: float = 0.7) -> None:
        """Hand the prompt over (once per name: a second submit of a name is a no-op)."""
        raise NotImplementedError

    def collect(self, name: str) -> LLMResponse | None:
        """The answer to call `name`, or None while it has none."""
        raise NotImplementedError

    def where(self, name: str) -> str:
        """Where call `name`'s prompt waits, for the message that says what to do."""
        raise NotImplementedError

    def complete(
        self, messages: list[Message], *, max_tokens: int = 8192, temperature: float = 0.7, name: str = ""
    ) -> LLMResponse:
        """The answer if there is one already; else the prompt is submitted and LLMPending raised."""
        if not name:
            raise LLMError(f"{self.name} answers named calls only")
        answer = self.collect(name)
        if answer is not None:
            return answer
        self.submit(name, messages, max_tokens=max_tokens, temperature=temperature)
        answer = self.collect(name)  # a client that answers at once (a finished batch, a fast agent)
        if answer is None:
            raise LLMPending(name, self.where(name))
        return answer


def render(messages: list[Message]) -> str:
    """A prompt as one Markdown text: how it is stored, written by `--dry-run` and the inbox, piped to exec."""
    return "\n\n".join(f"## {m.role}\n\n{m.content}" for m in messages)


def estimated_tokens(text: str) -> int:
    """Tokens from characters where no tokenizer or usage report is at hand (about four characters a token for
    English and code); results built on it say they are estimates."""
    return (len(text) + 3) // 4
