"""The fake LLM servers speak well enough for the real openai and anthropic SDKs, errors and retries included."""

from __future__ import annotations

import json
import time

import anthropic
import openai
import pytest

from tests.fake_llm import Delay, FakeLLMServer, Garbage, Reply, Status

MESSAGES = [{"role": "user", "content": "make it faster"}]


def openai_client(server: FakeLLMServer, **kwargs) -> openai.OpenAI:
    kwargs.setdefault("max_retries", 0)
    kwargs.setdefault("timeout", 2.0)
    return openai.OpenAI(base_url=server.base_url, api_key="x", **kwargs)


def anthropic_client(server: FakeLLMServer, **kwargs) -> anthropic.Anthropic:
    kwargs.setdefault("max_retries", 0)
    kwargs.setdefault("timeout", 2.0)
    return anthropic.Anthropic(base_url=server.base_url, api_key="x", **kwargs)


def ask_openai(server: FakeLLMServer, **client_kwargs):
    """One chat completion from a fresh client, closed afterwards."""
    with openai_client(server, **client_kwargs) as client:
        return client.chat.completions.create(model="gpt-fake", messages=MESSAGES)


def ask_anthropic(server: FakeLLMServer, max_tokens: int = 64, **client_kwargs):
    """One message from a fresh client, closed afterwards."""
    with anthropic_client(server, **client_kwargs) as client:
        return client.messages.create(model="claude-fake", max_tokens=max_tokens, messages=MESSAGES)


# ---------------------------------------------------------------- OpenAI


def test_openai_reply_text_and_usage():
    with FakeLLMServer("openai") as server:
        server.push(Reply("faster kernel", prompt_tokens=12, completion_tokens=34))
        completion = ask_openai(server)
    assert completion.choices[0].message.content == "faster kernel"
    assert completion.choices[0].finish_reason == "stop"
    assert completion.model == "gpt-fake"
    assert (completion.usage.prompt_tokens, completion.usage.completion_tokens) == (12, 34)
    assert completion.usage.total_tokens == 46
    [request] = server.requests
    assert request["messages"] == MESSAGES
    assert request["model"] == "gpt-fake"
    assert request["_path"] == "/v1/chat/completions"
    assert request["_headers"]["authorization"] == "Bearer x"


def test_openai_queue_in_order_then_default_repeats():
    with FakeLLMServer("openai", default=Reply("default")) as server:
        server.push(Reply("one"), Reply("two", finish_reason="length"))
        with openai_client(server) as client:
            answers = [client.chat.completions.create(model="gpt-fake", messages=MESSAGES).choices[0] for _ in range(4)]
    assert [a.message.content for a in answers] == ["one", "two", "default", "default"]
    assert answers[1].finish_reason == "length"
    assert len(server.requests) == 4


def test_openai_rate_limit_is_retried_by_the_sdk():
    with FakeLLMServer("openai") as server:
        server.push(Status(429, retry_after=0.01), Reply("after the limit"))
        completion = ask_openai(server, max_retries=2)
    assert completion.choices[0].message.content == "after the limit"
    assert len(server.requests) == 2
    assert server.requests[1]["_headers"]["x-stainless-retry-count"] == "1"


def test_openai_rate_limit_surfaces_without_retries():
    with FakeLLMServer("openai") as server:
        server.push(Status(429, retry_after=3))
        with pytest.raises(openai.RateLimitError) as caught:
            ask_openai(server, max_retries=0)
    assert caught.value.status_code == 429
    assert caught.value.response.headers["retry-after"] == "3"
    assert caught.value.response.headers["retry-after-ms"] == "3000"
    assert len(server.requests) == 1


def test_openai_server_errors_exhaust_the_retries():
    with FakeLLMServer("openai") as server:
        server.push(*[Status(500, retry_after=0.01)] * 3, Reply("never reached"))
        with pytest.raises(openai.InternalServerError):
            ask_openai(server, max_retries=2)
    assert len(server.requests) == 3


def test_openai_custom_error_body_reaches_the_exception():
    with FakeLLMServer("openai") as server:
        server.push(Status(400, body={"error": {"message": "context too long", "type": "invalid_request_error"}}))
        with pytest.raises(openai.BadRequestError, match="context too long"):
            ask_openai(server)


def test_openai_delay_beyond_the_timeout():
    with FakeLLMServer("openai") as server:
        server.push(Delay(5.0, Reply("too late")))
        started = time.monotonic()
        with pytest.raises(openai.APITimeoutError):
            ask_openai(server, timeout=0.2, max_retries=0)
        assert time.monotonic() - started < 1.5
    stopped = time.monotonic()
    assert stopped - started < 2.0  # stop() cut the delayed handler short


def test_openai_delay_within_the_timeout_still_answers():
    with FakeLLMServer("openai") as server:
        server.push(Delay(0.1, Reply("slow but fine")))
        assert ask_openai(server, timeout=2.0).choices[0].message.content == "slow but fine"


def test_openai_garbage_body():
    with FakeLLMServer("openai") as server:
        server.push(Garbage("<html>502 Bad Gateway</html>"), Garbage("plain words", content_type="text/plain"))
        # The SDK does not wrap a body that claims to be JSON but is not: the JSON decoder's error escapes.
        with pytest.raises(json.JSONDecodeError):
            ask_openai(server)
        # A non-JSON content type is only an error with strict validation (else the SDK returns the bare text).
        with pytest.raises(openai.APIResponseValidationError):
            ask_openai(server, _strict_response_validation=True)


def test_openai_streaming_is_refused():
    with FakeLLMServer("openai") as server:
        with openai_client(server) as client, pytest.raises(openai.BadRequestError, match="does not stream"):
            client.chat.completions.create(model="gpt-fake", messages=MESSAGES, stream=True)


# ---------------------------------------------------------------- Anthropic


def test_anthropic_reply_text_and_usage():
    with FakeLLMServer("anthropic") as server:
        server.push(Reply("faster kernel", prompt_tokens=7, completion_tokens=9))
        message = ask_anthropic(server, max_tokens=99)
    assert [block.text for block in message.content] == ["faster kernel"]
    assert (message.usage.input_tokens, message.usage.output_tokens) == (7, 9)
    assert message.stop_reason == "end_turn"
    assert message.model == "claude-fake"
    [request] = server.requests
    assert request["_path"] == "/v1/messages"
    assert request["max_tokens"] == 99
    assert request["messages"] == MESSAGES
    assert "anthropic-version" in request["_headers"]


def test_anthropic_truncated_reply():
    with FakeLLMServer("anthropic") as server:
        server.push(Reply("cut", finish_reason="length"))
        assert ask_anthropic(server).stop_reason == "max_tokens"


def test_anthropic_rate_limit_retried_or_surfaced():
    with FakeLLMServer("anthropic") as server:
        server.push(Status(429, retry_after=0.01), Reply("after the limit"), Status(429))
        assert ask_anthropic(server, max_retries=2).content[0].text == "after the limit"
        with pytest.raises(anthropic.RateLimitError) as caught:
            ask_anthropic(server, max_retries=0)
    assert caught.value.body["error"]["type"] == "rate_limit_error"
    assert len(server.requests) == 3


def test_anthropic_overloaded():
    with FakeLLMServer("anthropic") as server:
        server.push(Status(529))
        with pytest.raises(anthropic.InternalServerError) as caught:
            ask_anthropic(server)
    assert caught.value.status_code == 529


def test_anthropic_delay_beyond_the_timeout():
    with FakeLLMServer("anthropic") as server:
        server.push(Delay(5.0, Reply("too late")))
        with pytest.raises(anthropic.APITimeoutError):
            ask_anthropic(server, timeout=0.2)


def test_anthropic_garbage_body():
    with FakeLLMServer("anthropic") as server:
        server.push(Garbage("not json at all"), Garbage("plain words", content_type="text/plain"))
        with pytest.raises(json.JSONDecodeError):
            ask_anthropic(server)
        with pytest.raises(anthropic.APIResponseValidationError):
            ask_anthropic(server, _strict_response_validation=True)


# ---------------------------------------------------------------- the server itself


def test_wrong_endpoint_is_not_found():
    with FakeLLMServer("openai") as server:
        root = server.base_url.removesuffix("/v1")
        with anthropic.Anthropic(base_url=root, api_key="x", max_retries=0) as client:
            with pytest.raises(anthropic.NotFoundError):
                client.messages.create(model="claude-fake", max_tokens=8, messages=MESSAGES)
    assert server.requests[0]["_path"] == "/v1/messages"


def test_server_lifecycle_and_validation():
    server = FakeLLMServer("anthropic")
    with pytest.raises(RuntimeError):
        _ = server.base_url
    with pytest.raises(TypeError):
        server.push("not a behaviour")  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        FakeLLMServer("gemini")
    with server:
        assert server.base_url == f"http://127.0.0.1:{server.port}"
    with FakeLLMServer("openai") as other:
        assert other.base_url.endswith("/v1")
