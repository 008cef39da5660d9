"""Providers through their official SDKs: any OpenAI-compatible endpoint, and Anthropic's Messages API.

SDK retries are off; tenacity retries rate limits, timeouts, connection and server errors with
exponential backoff, so every provider behaves the same and the policy is in one place. The SDK client is built at
the first call, so building a prompt (`optimize --dry-run`) needs no API key; a missing key is an LLMError then.
An error names the URL that failed.
"""

from __future__ import annotations

import inspect
import os
import threading
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


def _failure(client: _SDKClient, e: Exception) -> LLMError:
    """The SDK's error as an LLMError naming the model, the URL that failed and, for a server that could not be
    reached, where to look."""
    try:
        url = str(e.request.url)  # the SDK's APIError carries the httpx request that failed
    except Exception:  # noqa: BLE001 - no request (a malformed reply), or httpx's unset-request RuntimeError
        url = client.endpoint
    if type(e).__name__ == "APIConnectionError":
        return LLMError(
            f"{client.name} at {url}: {type(e).__name__}: {str(e).rstrip('.')} (is a server listening there?)"
        )
    return LLMError(f"{client.name} at {url}: {type(e).__name__}: {e}")


class _SDKClient(LLMClient):
    """A provider whose SDK client is built at the first call (with the key then), once, under a lock."""

    KEY_ENV = ""  # the variable the key is read from
    DEFAULT_URL = ""  # where the SDK calls without a base URL

    def __init__(
        self, model: str, *, base_url: str | None, api_key: str | None, timeout_s: float, retry: RetryPolicy | None
    ):
        super().__init__(model)
        self.base_url = base_url
        self._api_key, self._timeout_s, self._retry = api_key, timeout_s, retry or RetryPolicy()
        self._call: Any = None
        self._lock = threading.Lock()

    @property
    def endpoint(self) -> str:
        """The base URL calls go to (the SDK's default, or the provider's *_BASE_URL variable, without one)."""
        return self.base_url or os.environ.get(self.KEY_ENV.replace("API_KEY", "BASE_URL")) or self.DEFAULT_URL

    def needs_key(self) -> bool:
        return not self.base_url  # a local server takes any key

    def check_key(self) -> str:
        key = self._api_key or os.environ.get(self.KEY_ENV)
        if key is None and self.needs_key():
            local = " (or --llm-base-url for a local server)" if self.provider == "openai" else ""
            raise LLMError(f"{self.name}: no API key: set {self.KEY_ENV}{local}")
        return key or "unused"

    def _sdk(self) -> Any:
        with self._lock:
            if self._call is None:
                self._call = self._retry.wrap(self._build(self.check_key()))
            return self._call

    def _build(self, key: str) -> Any:
        """The SDK's create function for this endpoint and key."""
        raise NotImplementedError


class OpenAICompatible(_SDKClient):
    KEY_ENV, DEFAULT_URL = "OPENAI_API_KEY", "https://api.openai.com/v1"

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
        super().__init__(
            model,
            base_url=base_url or DEFAULT_BASE_URLS.get(provider),
            api_key=api_key,
            timeout_s=timeout_s,
            retry=retry,
        )
        self.provider = provider

    def needs_key(self) -> bool:
        return self.provider == "openai" and not self.base_url

    def _build(self, key: str) -> Any:
        import openai

        client = openai.OpenAI(base_url=self.base_url, api_key=key, timeout=self._timeout_s, max_retries=0)
        return client.chat.completions.create

    def complete(
        self, messages: list[Message], *, max_tokens: int = 8192, temperature: float = 0.7, name: str = ""
    ) -> LLMResponse:
        call = self._sdk()
        t0 = time.monotonic()
        try:
            r: Any = call(
                model=self.model,
                messages=[{"role": m.role, "content": m.content} for m in messages],
                max_tokens=max_tokens,
                temperature=temperature,
            )
            text = r.choices[0].message.content or ""
        except Exception as e:  # noqa: BLE001 - SDK errors and malformed replies end the same way
            raise _failure(self, e) from e
        usage = getattr(r, "usage", None)
        return LLMResponse(
            text=text,
            model=self.name,
            prompt_tokens=getattr(usage, "prompt_tokens", 0) or 0,
            completion_tokens=getattr(usage, "completion_tokens", 0) or 0,
            latency_s=time.monotonic() - t0,
        )


class Anthropic(_SDKClient):
    provider = "anthropic"
    KEY_ENV, DEFAULT_URL = "ANTHROPIC_API_KEY", "https://api.anthropic.com"

    def __init__(
        self,
        model: str,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        timeout_s: float = 300.0,
        retry: RetryPolicy | None = None,
    ):
        super().__init__(model, base_url=base_url, api_key=api_key, timeout_s=timeout_s, retry=retry)
        self._takes_temperature = True

    def _build(self, key: str) -> Any:
        import anthropic

        client = anthropic.Anthropic(base_url=self.base_url, api_key=key, timeout=self._timeout_s, max_retries=0)
        self._takes_temperature = "temperature" in inspect.signature(client.messages.create).parameters
        return client.messages.create

    def complete(
        self, messages: list[Message], *, max_tokens: int = 8192, temperature: float = 0.7, name: str = ""
    ) -> LLMResponse:
        call = self._sdk()
        system = "\n\n".join(m.content for m in messages if m.role == "system")
        chat = [{"role": m.role, "content": m.content} for m in messages if m.role != "system"]
        t0 = time.monotonic()
        try:
            kwargs: dict[str, Any] = {"model": self.model, "messages": chat, "max_tokens": max_tokens}
            if self._takes_temperature:  # newer SDKs dropped the parameter
                kwargs["temperature"] = temperature
            if system:
                kwargs["system"] = system
            r: Any = call(**kwargs)
            text = "".join(getattr(b, "text", "") for b in r.content)
        except Exception as e:  # noqa: BLE001
            raise _failure(self, e) from e
        return LLMResponse(
            text=text,
            model=self.name,
            prompt_tokens=r.usage.input_tokens or 0,
            completion_tokens=r.usage.output_tokens or 0,
            latency_s=time.monotonic() - t0,
        )
