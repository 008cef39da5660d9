"""From `--llm` specs to clients, and the choice among several models (an ensemble)."""

from __future__ import annotations

import random
import threading
from dataclasses import dataclass

from kernelevolve.llm.base import LLMClient, LLMError
from kernelevolve.llm.batch import AnthropicBatch, OpenAIBatch
from kernelevolve.llm.offline import ExecClient, InboxClient
from kernelevolve.llm.providers import DEFAULT_BASE_URLS, Anthropic, OpenAICompatible, RetryPolicy

OPENAI_COMPATIBLE = tuple(DEFAULT_BASE_URLS)


# Providers whose "model" is a command or a folder, which may hold "=" of its own: the whole text is theirs, and
# they take no weight.
FREE_FORM = ("exec", "inbox")


def parse_spec(spec: str) -> tuple[str, str, float]:
    """'provider:model[=weight]' -> (provider, model, weight); exec:CMD and inbox:DIR as written, weight 1."""
    if ":" not in spec:
        raise LLMError(
            f"--llm {spec!r}: expected PROVIDER:MODEL, e.g. openai:gpt-4.1, anthropic:claude-sonnet-4-5, "
            "vllm:Qwen/Qwen3-32B, ollama:qwen3, exec:'CMD', inbox:DIR, openai-batch:gpt-4.1, "
            "anthropic-batch:claude-sonnet-4-5, replay:RUN"
        )
    provider, model = spec.split(":", 1)
    weight = 1.0
    if "=" in model and provider not in FREE_FORM:
        model, w = model.rsplit("=", 1)
        try:
            weight = float(w)
        except ValueError:
            raise LLMError(f"--llm {spec}: the weight after '=' must be a number") from None
    return provider, model, weight


def make_client(
    provider: str,
    model: str,
    *,
    base_url: str | None = None,
    timeout_s: float = 300.0,
    retry: RetryPolicy | None = None,
) -> LLMClient:
    if provider in OPENAI_COMPATIBLE:
        return OpenAICompatible(provider, model, base_url=base_url, timeout_s=timeout_s, retry=retry)
    if provider == "anthropic":
        return Anthropic(model, base_url=base_url, timeout_s=timeout_s, retry=retry)
    if provider == "exec":
        return ExecClient(model, timeout_s=timeout_s)
    if provider == "inbox":
        return InboxClient(model)
    if provider == "openai-batch":
        return OpenAIBatch(model, base_url=base_url, timeout_s=timeout_s)
    if provider == "anthropic-batch":
        return AnthropicBatch(model, base_url=base_url, timeout_s=timeout_s)
    raise LLMError(
        f"unknown LLM provider {provider!r}: use one of {', '.join(OPENAI_COMPATIBLE)}, anthropic, exec, inbox, "
        "openai-batch, anthropic-batch, replay"
    )


@dataclass
class Arm:
    client: LLMClient
    weight: float
    calls: int = 0
    successes: int = 0  # calls whose candidate was correct
    cost: float = 0.0


class Ensemble:
    """Several models with weights; each call picks one in proportion to weight x smoothed success rate /
    smoothed cost per call, so a model that keeps failing or costs more is asked less often."""

    def __init__(self, clients: list[tuple[LLMClient, float]], rng: random.Random):
        if not clients:
            raise LLMError("no LLM configured")
        self.arms = [Arm(c, w) for c, w in clients]
        self.rng = rng
        self._lock = threading.Lock()

    def choose(self) -> Arm:
        with self._lock:
            if len(self.arms) == 1:
                return self.arms[0]
            mean_cost = sum(a.cost for a in self.arms) / max(1, sum(a.calls for a in self.arms))
            scores = []
            for a in self.arms:
                success = (a.successes + 1) / (a.calls + 2)
                per_call = a.cost / a.calls if a.calls else mean_cost
                scores.append(a.weight * success / (1.0 + (per_call / mean_cost if mean_cost else 0.0)))
            return self.rng.choices(self.arms, scores)[0]

    def record(self, arm: Arm, cost: float, success: bool) -> None:
        with self._lock:
            arm.calls += 1
            arm.cost += cost
            arm.successes += int(success)
