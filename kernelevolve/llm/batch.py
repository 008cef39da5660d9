"""`openai-batch:MODEL` and `anthropic-batch:MODEL`: OpenAI's Batch API and Anthropic's Message Batches (about
half the price of a live call, answers within 24 hours) as deferred clients. Each call is a batch of one request,
submitted once; a later session of the run polls it and serves its answer. Which batch holds which call is kept
under the cache folder, so it survives the process."""

from __future__ import annotations

import io
import json
import os
from pathlib import Path
from typing import Any

from kernelevolve.llm.base import DeferredClient, LLMError, LLMResponse, Message
from kernelevolve.platforms.base import cache_dir

ENDPOINT = "/v1/chat/completions"
WAITING = {"validating", "in_progress", "finalizing", "cancelling"}


class _BatchClient(DeferredClient):
    """What both providers' batch clients share: the API key, the SDK client, and the record of which batch
    holds which call (a file per call under the cache folder, written atomically)."""

    KEY_ENV = ""
    VENDOR = ""
    RECORD_PREFIX = ""  # the record's file name before the call's name

    def __init__(self, model: str, *, base_url: str | None = None, api_key: str | None = None, timeout_s: float = 300):
        super().__init__(model)
        self.base_url, self._api_key, self._timeout_s = base_url, api_key, timeout_s
        self.state_dir = cache_dir() / "batches"
        self._client: Any = None
        self._status: dict[str, str] = {}

    def check_key(self) -> str:
        key = self._api_key or os.environ.get(self.KEY_ENV)
        if key is None and not self.base_url:
            raise LLMError(f"{self.name}: no API key: set {self.KEY_ENV} (or --llm-base-url for a compatible server)")
        return key or "unused"

    def _sdk(self) -> Any:
        if self._client is None:
            self._client = self._build(self.check_key())
        return self._client

    def _build(self, key: str) -> Any:
        raise NotImplementedError

    def _state(self, name: str) -> Path:
        return self.state_dir / f"{self.RECORD_PREFIX}{name}.json"

    def _batch_id(self, name: str) -> str | None:
        try:
            return json.loads(self._state(name).read_text())["batch_id"]
        except FileNotFoundError:
            return None
        except (OSError, ValueError, KeyError) as e:
            raise LLMError(f"{self.name}: call {name}'s record {self._state(name)} is unreadable: {e}") from None

    def _record(self, name: str, batch_id: str) -> None:
        try:
            self.state_dir.mkdir(parents=True, exist_ok=True)
            tmp = self._state(name).with_suffix(".tmp")
            tmp.write_text(json.dumps({"batch_id": batch_id, "model": self.model}))
            tmp.replace(self._state(name))
        except OSError as e:
            raise LLMError(f"{self.name}: batch {batch_id} submitted, but its record cannot be written: {e}") from None

    def where(self, name: str) -> str:
        status = self._status.get(name, "submitted")
        return f"{self.VENDOR} batch {self._batch_id(name)} is {status}"

    def submit(self, name: str, messages: list[Message], *, max_tokens: int = 8192, temperature: float = 0.7) -> None:
        if self._batch_id(name) is not None:
            return
        try:
            batch_id = self._create(name, messages, max_tokens, temperature)
        except Exception as e:  # noqa: BLE001 - SDK errors end as one LLMError naming the call
            raise LLMError(f"{self.name}: submitting call {name} failed: {type(e).__name__}: {e}") from None
        self._record(name, batch_id)

    def collect(self, name: str) -> LLMResponse | None:
        batch_id = self._batch_id(name)
        return None if batch_id is None else self._result(name, batch_id)

    def _create(self, name: str, messages: list[Message], max_tokens: int, temperature: float) -> str:
        """Submit a batch of this one call; its id."""
        raise NotImplementedError

    def _result(self, name: str, batch_id: str) -> LLMResponse | None:
        """The call's answer from its batch, None while the batch runs."""
        raise NotImplementedError


class OpenAIBatch(_BatchClient):
    provider = "openai-batch"
    KEY_ENV, VENDOR = "OPENAI_API_KEY", "OpenAI"

    def _build(self, key: str) -> Any:
        import openai

        return openai.OpenAI(base_url=self.base_url, api_key=key, timeout=self._timeout_s, max_retries=2)

    def _create(self, name: str, messages: list[Message], max_tokens: int, temperature: float) -> str:
        line = {
            "custom_id": name,
            "method": "POST",
            "url": ENDPOINT,
            "body": {
                "model": self.model,
                "messages": [{"role": m.role, "content": m.content} for m in messages],
                "max_tokens": max_tokens,
                "temperature": temperature,
            },
        }
        sdk = self._sdk()
        upload = sdk.files.create(file=(f"{name}.jsonl", io.BytesIO(json.dumps(line).encode())), purpose="batch")
        return sdk.batches.create(input_file_id=upload.id, endpoint=ENDPOINT, completion_window="24h").id

    def _result(self, name: str, batch_id: str) -> LLMResponse | None:
        sdk = self._sdk()
        try:
            batch = sdk.batches.retrieve(batch_id)
        except Exception as e:  # noqa: BLE001
            raise LLMError(f"{self.name}: polling batch {batch_id} failed: {type(e).__name__}: {e}") from None
        self._status[name] = batch.status
        if batch.status in WAITING:
            return None
        if batch.status != "completed":
            raise LLMError(f"{self.name}: batch {batch_id} of call {name} is {batch.status}: {batch.errors}")
        file_id = batch.output_file_id or batch.error_file_id
        try:
            content = sdk.files.content(file_id).text
        except Exception as e:  # noqa: BLE001
            raise LLMError(f"{self.name}: reading batch {batch_id}'s output failed: {type(e).__name__}: {e}") from None
        try:
            return _answer(self.name, name, batch_id, content)
        except (ValueError, KeyError, IndexError, TypeError, AttributeError) as e:
            raise LLMError(f"{self.name}: batch {batch_id}'s output is malformed: {type(e).__name__}: {e}") from None


def _answer(client: str, name: str, batch_id: str, content: str) -> LLMResponse:
    """Call `name`'s line of a batch's output file, as a response (an error line as an LLMError)."""
    for raw in content.splitlines():
        if not raw.strip():
            continue
        line = json.loads(raw)
        if line.get("custom_id") != name:
            continue
        response, error = line.get("response") or {}, line.get("error")
        body = response.get("body") or {}
        if error or response.get("status_code", 200) != 200:
            raise LLMError(f"{client}: batch {batch_id} answered call {name} with an error: {error or body}")
        usage = body.get("usage") or {}
        return LLMResponse(
            text=body["choices"][0]["message"]["content"] or "",
            model=client,
            prompt_tokens=usage.get("prompt_tokens", 0),
            completion_tokens=usage.get("completion_tokens", 0),
        )
    raise LLMError(f"{client}: batch {batch_id}'s output has no line for call {name}")


class AnthropicBatch(_BatchClient):
    """Anthropic's Message Batches: a batch of one request per call, its result read once the batch has ended."""

    provider = "anthropic-batch"
    KEY_ENV, VENDOR, RECORD_PREFIX = "ANTHROPIC_API_KEY", "Anthropic", "anthropic-"

    def _build(self, key: str) -> Any:
        import anthropic

        return anthropic.Anthropic(base_url=self.base_url, api_key=key, timeout=self._timeout_s, max_retries=2)

    def _create(self, name: str, messages: list[Message], max_tokens: int, temperature: float) -> str:
        params: dict[str, Any] = {
            "model": self.model,
            "max_tokens": max_tokens,
            "messages": [{"role": m.role, "content": m.content} for m in messages if m.role != "system"],
        }
        system = "\n\n".join(m.content for m in messages if m.role == "system")
        if system:
            params["system"] = system
        return self._sdk().messages.batches.create(requests=[{"custom_id": name, "params": params}]).id

    def _result(self, name: str, batch_id: str) -> LLMResponse | None:
        batches = self._sdk().messages.batches
        try:
            batch = batches.retrieve(batch_id)
        except Exception as e:  # noqa: BLE001
            raise LLMError(f"{self.name}: polling batch {batch_id} failed: {type(e).__name__}: {e}") from None
        self._status[name] = batch.processing_status
        if batch.processing_status != "ended":
            return None
        try:
            results = list(batches.results(batch_id))
        except Exception as e:  # noqa: BLE001
            raise LLMError(f"{self.name}: reading batch {batch_id}'s results failed: {type(e).__name__}: {e}") from None
        for item in results:
            if item.custom_id != name:
                continue
            if item.result.type != "succeeded":
                raise LLMError(f"{self.name}: batch {batch_id} answered call {name} with {item.result.type}")
            message = item.result.message
            return LLMResponse(
                text="".join(getattr(b, "text", "") for b in message.content),
                model=self.name,
                prompt_tokens=message.usage.input_tokens or 0,
                completion_tokens=message.usage.output_tokens or 0,
            )
        raise LLMError(f"{self.name}: batch {batch_id}'s results have no line for call {name}")
