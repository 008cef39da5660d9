"""Local fake LLM servers for tests: the real OpenAI and Anthropic SDKs talk to 127.0.0.1, never the network.

A test queues behaviours (a reply, an HTTP error, a late reply, a non-JSON body) and points the SDK's base_url at
the server; every request body is recorded so the test can check what the client sent. Standard library only.
"""

from __future__ import annotations

import itertools
import json
import threading
import time
from collections import deque
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import urlsplit

KINDS = {"openai": "/v1/chat/completions", "anthropic": "/v1/messages"}

# Anthropic names its stop reasons differently; Reply.finish_reason uses OpenAI's words.
_ANTHROPIC_STOP = {"stop": "end_turn", "length": "max_tokens"}
_ANTHROPIC_ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    413: "request_too_large",
    429: "rate_limit_error",
    529: "overloaded_error",
}
_OPENAI_ERROR_TYPES = {
    400: "invalid_request_error",
    401: "invalid_request_error",
    404: "invalid_request_error",
    429: "rate_limit_exceeded",
}


@dataclass(frozen=True)
class Reply:
    """A normal 200 completion."""

    text: str
    prompt_tokens: int = 100
    completion_tokens: int = 50
    finish_reason: str = "stop"  # "length" for a truncated answer (Anthropic: "max_tokens")


@dataclass(frozen=True)
class Status:
    """An HTTP error such as 429 or 500; body defaults to the provider's error shape."""

    code: int
    body: dict | None = None
    retry_after: float | None = None  # seconds; sent as retry-after and retry-after-ms


@dataclass(frozen=True)
class Garbage:
    """A 200 whose body is not the JSON the SDK expects."""

    text: str
    content_type: str = "application/json"


@dataclass(frozen=True)
class Delay:
    """Answer only after `seconds`, to trip client timeouts; stop() cuts the wait short."""

    seconds: float
    then: Reply | Status | Garbage


Behaviour = Reply | Status | Garbage | Delay


class FakeLLMServer:
    """An OpenAI-compatible or Anthropic Messages API server on a free port of 127.0.0.1, serving queued behaviours."""

    def __init__(self, kind: str = "openai", default: Behaviour | None = None) -> None:
        if kind not in KINDS:
            raise ValueError(f"kind must be one of {sorted(KINDS)}, not {kind!r}")
        self.kind = kind
        self.default: Behaviour = default if default is not None else Reply("ok")
        # Each entry: the parsed JSON body plus "_path" and "_headers" (lower-cased names); "_raw" if not JSON.
        self.requests: list[dict[str, Any]] = []
        self._queue: deque[Behaviour] = deque()
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._ids = itertools.count(1)
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # ------------------------------------------------------------ control

    @property
    def port(self) -> int:
        if self._httpd is None:
            raise RuntimeError("the fake LLM server is not started")
        return self._httpd.server_address[1]

    @property
    def base_url(self) -> str:
        """What the SDK's base_url expects: OpenAI's includes /v1, Anthropic's does not."""
        root = f"http://127.0.0.1:{self.port}"
        return root + "/v1" if self.kind == "openai" else root

    def push(self, *behaviours: Behaviour) -> None:
        for behaviour in behaviours:
            if not isinstance(behaviour, Reply | Status | Garbage | Delay):
                raise TypeError(f"not a behaviour: {behaviour!r}")
        with self._lock:
            self._queue.extend(behaviours)

    def start(self) -> FakeLLMServer:
        if self._httpd is not None:
            return self
        self._stopping.clear()
        httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
        httpd.fake = self  # type: ignore[attr-defined]
        self._httpd = httpd
        self._thread = threading.Thread(
            target=httpd.serve_forever, kwargs={"poll_interval": 0.02}, name=f"fake-{self.kind}", daemon=True
        )  # a short poll keeps stop() quick
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._httpd is None:
            return
        self._stopping.set()  # wakes handlers sleeping in a Delay
        self._httpd.shutdown()
        self._httpd.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)
        self._httpd = self._thread = None

    def __enter__(self) -> FakeLLMServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # ------------------------------------------------------------ serving

    def _record(self, entry: dict[str, Any]) -> None:
        with self._lock:
            self.requests.append(entry)

    def _next(self) -> Behaviour:
        with self._lock:
            return self._queue.popleft() if self._queue else self.default

    def _serve(self, handler: _Handler, body: dict[str, Any]) -> None:
        behaviour = self._next()
        if isinstance(behaviour, Delay):
            if self._stopping.wait(behaviour.seconds):
                return
            behaviour = behaviour.then
        if isinstance(behaviour, Reply):
            handler.send_json(200, self._completion(behaviour, body.get("model") or "fake-model"))
        elif isinstance(behaviour, Status):
            headers = {}
            if behaviour.retry_after is not None:
                headers["retry-after"] = f"{behaviour.retry_after:g}"
                headers["retry-after-ms"] = str(round(behaviour.retry_after * 1000))
            body_out = behaviour.body if behaviour.body is not None else self._error(behaviour.code)
            handler.send_json(behaviour.code, body_out, headers)
        elif isinstance(behaviour, Garbage):
            handler.send_bytes(200, behaviour.text.encode(), behaviour.content_type)
        else:
            raise TypeError(f"Delay.then must be a Reply, Status or Garbage, not {behaviour!r}")

    def _completion(self, reply: Reply, model: str) -> dict[str, Any]:
        n = next(self._ids)
        if self.kind == "openai":
            return {
                "id": f"chatcmpl-fake{n}",
                "object": "chat.completion",
                "created": int(time.time()),
                "model": model,
                "choices": [
                    {
                        "index": 0,
                        "message": {"role": "assistant", "content": reply.text, "refusal": None},
                        "logprobs": None,
                        "finish_reason": reply.finish_reason,
                    }
                ],
                "usage": {
                    "prompt_tokens": reply.prompt_tokens,
                    "completion_tokens": reply.completion_tokens,
                    "total_tokens": reply.prompt_tokens + reply.completion_tokens,
                },
            }
        return {
            "id": f"msg_fake{n}",
            "type": "message",
            "role": "assistant",
            "model": model,
            "content": [{"type": "text", "text": reply.text}],
            "stop_reason": _ANTHROPIC_STOP.get(reply.finish_reason, reply.finish_reason),
            "stop_sequence": None,
            "usage": {"input_tokens": reply.prompt_tokens, "output_tokens": reply.completion_tokens},
        }

    def _error(self, code: int, message: str | None = None) -> dict[str, Any]:
        message = message or f"fake error {code}"
        if self.kind == "openai":
            kind = _OPENAI_ERROR_TYPES.get(code, "server_error" if code >= 500 else "invalid_request_error")
            return {"error": {"message": message, "type": kind, "param": None, "code": kind}}
        kind = _ANTHROPIC_ERROR_TYPES.get(code, "api_error" if code >= 500 else "invalid_request_error")
        return {"type": "error", "error": {"type": kind, "message": message}}


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, as the SDKs' connection pools expect
    timeout = 10  # idle keep-alive connections end by themselves

    @property
    def fake(self) -> FakeLLMServer:
        return self.server.fake  # type: ignore[attr-defined]

    def log_message(self, *args: Any) -> None:
        pass  # keep test output clean

    def do_POST(self) -> None:
        raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        try:
            parsed = json.loads(raw)
        except ValueError:
            parsed = None
        entry: dict[str, Any] = dict(parsed) if isinstance(parsed, dict) else {"_raw": raw.decode(errors="replace")}
        path = urlsplit(self.path).path
        entry["_path"] = path
        entry["_headers"] = {name.lower(): value for name, value in self.headers.items()}
        self.fake._record(entry)
        if path != KINDS[self.fake.kind]:
            self.send_json(404, self.fake._error(404, f"the fake {self.fake.kind} server has no {path}"))
        elif not isinstance(parsed, dict):
            self.send_json(400, self.fake._error(400, "the request body is not a JSON object"))
        elif parsed.get("stream"):
            self.send_json(400, self.fake._error(400, "the fake server does not stream"))
        else:
            self.fake._serve(self, parsed)

    def do_GET(self) -> None:
        self.fake._record(
            {"_path": urlsplit(self.path).path, "_headers": {k.lower(): v for k, v in self.headers.items()}}
        )
        self.send_json(404, self.fake._error(404, "the fake server only answers POST"))

    def send_json(self, code: int, body: Any, headers: dict[str, str] | None = None) -> None:
        self.send_bytes(code, json.dumps(body).encode(), "application/json", headers)

    def send_bytes(self, code: int, data: bytes, content_type: str, headers: dict[str, str] | None = None) -> None:
        try:
            self.send_response(code)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(data)))
            request_id_header = "x-request-id" if self.fake.kind == "openai" else "request-id"
            self.send_header(request_id_header, f"req_fake{id(self):x}")
            for name, value in (headers or {}).items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(data)
            self.wfile.flush()
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True  # the client gave up (a timeout); nothing to tell it
