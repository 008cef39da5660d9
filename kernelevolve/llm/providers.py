"""Providers through their official SDKs: any OpenAI-compatible endpoint, and Anthropic's Messages API.

SDK retries are off; tenacity retries rate limits, timeouts, connection and server errors with
exponential backoff, so every provider behaves the same and the policy is in one place.
"""

from __future__ import annotations

import inspect
import os
import time
from typing import Any

from kernelevolve.llm.base import LLMClient, LLMError, LLMResponse, Message

# Base URLs of OpenAI-compatible servers by provider name (override with --llm-base-url).
DEFAULT_BASE_URLS = {
    "openai": None,  # the SDK's default
    "vllm": "http://localhost:8000/v1",
    "sglang": "http://localhost:30000/v1",
    "ollama": "http://localhost:11434/v1",
    "lmstudio": "http://localhost:1234/v1",
}


def _retryable(e: BaseException) -> bool:
    status = getattr(e, "status_code", None)
    name = type(e).__name__
    return name in ("RateLimitError", "APITimeoutError", "APIConnectionError", "InternalServerError") or (
        isinstance(status, int) and (status == 429 or status >= 500)
    )


class RetryPolicy:
    def __init__(self, attempts: int = 4, initial_s: float = 1.0, max_s: float = 30.0):
        self.attempts, self.initial_s, self.max_s = attempts, initial_s, max_s

    def wrap(self, fn):
        from tenacity import retry, retry_if_exception, stop_after_attempt, wait_exponential

        return retry(
            retry=retry_if_exception(_retryable),
            stop=stop_after_attempt(self.attempts),
            wait=wait_exponential(multiplier=self.initial_s, max=self.max_s),
            reraise=True,
        )(fn)


class OpenAICompatible(LLMClient):
    def __init__(
        self,
        provider: str,
        model: str,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        timeout_s: float = 300.0,
        retry: RetryPolicy | None = None,
    ):
        super().__init__(model)
        import openai

        self.provider = provider
        key = api_key or os.environ.get("OPENAI_API_KEY") or ("unused" if provider != "openai" or base_url else None)
        if key is None:
            raise LLMError("no API key for openai: set OPENAI_API_KEY (or use --llm-base-url for a local server)")
        self._client = openai.OpenAI(
            base_url=base_url or DEFAULT_BASE_URLS.get(provider), api_key=key, timeout=timeout_s, max_retries=0
        )
        self._call = (retry or RetryPolicy()).wrap(self._client.chat.completions.create)

    def complete(self, messages: list[Message], *, max_tokens: int = 8192, temperature: float = 0.7) -> LLMResponse:
        t0 = time.monotonic()
        try:
            r: Any = self._call(
                model=self.model,
                messages=[{"role": m.role, "content": m.content} for m in messages],
                max_tokens=max_tokens,
                temperature=temperature,
            )
            text = r.choices[0].message.content or ""
        except Exception as e:  # noqa: BLE001 - SDK errors and malformed replies end the same way
            raise LLMError(f"{self.name}: {type(e).__name__}: {e}") from e
        usage = getattr(r, "usage", None)
        return LLMResponse(
            text=text,
            model=self.name,
            prompt_tokens=getattr(usage, "prompt_tokens", 0) or 0,
            completion_tokens=getattr(usage, "completion_tokens", 0) or 0,
            latency_s=time.monotonic() - t0,
        )


class Anthropic(LLMClient):
    provider = "anthropic"

    def __init__(
        self,
        model: str,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        timeout_s: float = 300.0,
        retry: RetryPolicy | None = None,
    ):
        super().__init__(model)
        import anthropic

        key = api_key or os.environ.get("ANTHROPIC_API_KEY") or ("unused" if base_url else None)
        if key is None:
            raise LLMError("no API key for anthropic: set ANTHROPIC_API_KEY")
        self._client = anthropic.Anthropic(base_url=base_url, api_key=key, timeout=timeout_s, max_retries=0)
        self._takes_temperature = "temperature" in inspect.signature(self._client.messages.create).parameters
        self._call = (retry or RetryPolicy()).wrap(self._client.messages.create)

    def complete(self, messages: list[Message], *, max_tokens: int = 8192, temperature: float = 0.7) -> LLMResponse:
        system = "\n\n".join(m.content for m in messages if m.role == "system")
        chat = [{"role": m.role, "content": m.content} for m in messages if m.role != "system"]
        t0 = time.monotonic()
        try:
            kwargs: dict[str, Any] = {"model": self.model, "messages": chat, "max_tokens": max_tokens}
            if self._takes_temperature:  # newer SDKs dropped the parameter
                kwargs["temperature"] = temperature
            if system:
                kwargs["system"] = system
            r: Any = self._call(**kwargs)
            text = "".join(getattr(b, "text", "") for b in r.content)
        except Exception as e:  # noqa: BLE001
            raise LLMError(f"{self.name}: {type(e).__name__}: {e}") from e
        return LLMResponse(
            text=text,
            model=self.name,
            prompt_tokens=r.usage.input_tokens or 0,
            completion_tokens=r.usage.output_tokens or 0,
            latency_s=time.monotonic() - t0,
        )
