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


def _failure(client: OpenAICompatible | Anthropic, e: Exception) -> LLMError:
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
        self.provider = provider
        self.base_url = base_url or DEFAULT_BASE_URLS.get(provider)
        self._api_key, self._timeout_s, self._retry = api_key, timeout_s, retry or RetryPolicy()
        self._call: Any = None
        self._lock = threading.Lock()

    @property
    def endpoint(self) -> str:
        """The base URL calls go to (the SDK's default, or OPENAI_BASE_URL, without one)."""
        return self.base_url or os.environ.get("OPENAI_BASE_URL") or "https://api.openai.com/v1"

    def check_key(self) -> str:
        """The API key calls will use; LLMError naming the variable to set when there is none."""
        key = self._api_key or os.environ.get("OPENAI_API_KEY")
        if key is None and self.provider == "openai" and not self.base_url:
            raise LLMError(f"{self.name}: no API key: set OPENAI_API_KEY (or --llm-base-url for a local server)")
        return key or "unused"  # a local server takes any key

    def _sdk(self) -> Any:
        with self._lock:
            if self._call is None:
                import openai

                client = openai.OpenAI(
                    base_url=self.base_url, api_key=self.check_key(), timeout=self._timeout_s, max_retries=0
                )
                self._call = self._retry.wrap(client.chat.completions.create)
            return self._call

    def complete(self, messages: list[Message], *, max_tokens: int = 8192, temperature: float = 0.7) -> LLMResponse:
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
        self.base_url = base_url
        self._api_key, self._timeout_s, self._retry = api_key, timeout_s, retry or RetryPolicy()
        self._call: Any = None
        self._takes_temperature = True
        self._lock = threading.Lock()

    @property
    def endpoint(self) -> str:
        """The base URL calls go to (the SDK's default, or ANTHROPIC_BASE_URL, without one)."""
        return self.base_url or os.environ.get("ANTHROPIC_BASE_URL") or "https://api.anthropic.com"

    def check_key(self) -> str:
        """The API key calls will use; LLMError naming the variable to set when there is none."""
        key = self._api_key or os.environ.get("ANTHROPIC_API_KEY")
        if key is None and not self.base_url:
            raise LLMError(f"{self.name}: no API key: set ANTHROPIC_API_KEY")
        return key or "unused"

    def _sdk(self) -> Any:
        with self._lock:
            if self._call is None:
                import anthropic

                client = anthropic.Anthropic(
                    base_url=self.base_url, api_key=self.check_key(), timeout=self._timeout_s, max_retries=0
                )
                self._takes_temperature = "temperature" in inspect.signature(client.messages.create).parameters
                self._call = self._retry.wrap(client.messages.create)
            return self._call

    def complete(self, messages: list[Message], *, max_tokens: int = 8192, temperature: float = 0.7) -> LLMResponse:
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
