"""An honest OpenAI-compatible chat-completions server on loopback, for offline tests of the real ChatOpenAI path.

``ChatOpenAI(base_url=stub.url, api_key="sk-test")`` talks to it over real HTTP
through the ``openai`` client: the request is the JSON ChatOpenAI really sends,
the answer is parsed by the real client code. Each test scripts the replies
with a callable that receives the parsed request body (``messages``, ``tools``,
``tool_choice``, ``response_format`` …) and returns the assistant message::

    def reply(request: dict) -> dict:
        return {"content": "hello"}                     # or {"tool_calls": [...]}

    stub.reply = reply
    ChatOpenAI(model="gpt-4o-mini", base_url=stub.url, api_key="sk-test").invoke("hi")
    assert stub.requests[0]["messages"][0]["content"] == "hi"

A reply may also be :class:`StubHTTPError` (an error status with OpenAI's error
body) or :class:`RawReply` (a response body sent as is, for malformed answers).
``POST /v1/chat/completions`` is served non-streaming and, when ``"stream":
true`` is asked, as server-sent events in OpenAI's chunk format. The server binds
127.0.0.1 only, serves a bounded number of requests, and the fixture stops it
at teardown.
"""

from __future__ import annotations

import itertools
import json
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

__all__ = [
    "OpenAIStub",
    "RawReply",
    "StubHTTPError",
    "openai_stub",
    "running_openai_stub",
    "tool_call",
    "tool_results",
]

_MAX_REQUESTS = 200
_MAX_BODY = 4 * 1024 * 1024


@dataclass
class StubHTTPError:
    """Answer with an HTTP error status and OpenAI's error JSON."""

    status: int = 500
    message: str = "internal server error"


@dataclass
class RawReply:
    """Answer 200 with this exact body (e.g. a truncated or invalid JSON document)."""

    body: str


Reply = dict[str, Any] | StubHTTPError | RawReply


def tool_call(name: str, arguments: dict[str, Any] | str, *, call_id: str | None = None) -> dict[str, Any]:
    """One assistant ``tool_calls`` entry in OpenAI's schema (``arguments`` is a JSON string on the wire)."""
    args = arguments if isinstance(arguments, str) else json.dumps(arguments, ensure_ascii=False)
    return {"id": call_id or f"call_{name}", "type": "function", "function": {"name": name, "arguments": args}}


def tool_results(request: dict[str, Any]) -> list[dict[str, Any]]:
    """The ``role: tool`` messages already in a request, oldest first."""
    return [m for m in request.get("messages", []) if m.get("role") == "tool"]


@dataclass
class OpenAIStub:
    """The running stub: its base URL, the scripted ``reply`` and every request received."""

    url: str
    reply: Callable[[dict[str, Any]], Reply] = field(default=lambda request: {"content": "ok"})
    requests: list[dict[str, Any]] = field(default_factory=list)
    paths: list[str] = field(default_factory=list)
    headers: list[dict[str, str]] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _ids: Iterator[int] = field(default_factory=lambda: itertools.count(1))

    def _next_id(self) -> int:
        with self._lock:
            return next(self._ids)


def _completion(request: dict[str, Any], message: dict[str, Any], n: int) -> dict[str, Any]:
    msg: dict[str, Any] = {"role": "assistant", "content": message.get("content")}
    calls = message.get("tool_calls")
    if calls:
        msg["tool_calls"] = calls
    if "content" not in message and calls:
        msg["content"] = None
    finish = message.get("finish_reason") or ("tool_calls" if calls else "stop")
    prompt_tokens = len(json.dumps(request.get("messages", []), ensure_ascii=False)) // 4
    completion_tokens = max(1, len(json.dumps(msg, ensure_ascii=False)) // 4)
    return {
        "id": f"chatcmpl-stub{n}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": request.get("model", "stub"),
        "system_fingerprint": "fp_stub",
        "choices": [{"index": 0, "message": msg, "logprobs": None, "finish_reason": finish}],
        "usage": {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens,
        },
    }


def _chunks(completion: dict[str, Any]) -> list[dict[str, Any]]:
    """The completion as OpenAI streams it: role, content, each tool call, then the finish reason."""
    base = {k: completion[k] for k in ("id", "created", "model", "system_fingerprint")}
    base["object"] = "chat.completion.chunk"
    choice = completion["choices"][0]
    msg = choice["message"]

    def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        return {**base, "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}]}

    out = [chunk({"role": "assistant", "content": ""})]
    if msg.get("content"):
        out.append(chunk({"content": msg["content"]}))
    for i, call in enumerate(msg.get("tool_calls") or []):
        out.append(chunk({"tool_calls": [{"index": i, **call}]}))
    out.append(chunk({}, choice["finish_reason"]))
    return out


class _Handler(BaseHTTPRequestHandler):
    server: _Server
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:  # quiet: no stderr noise in tests
        return

    def _send(self, status: int, body: str, content_type: str = "application/json") -> None:
        data = body.encode()
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _error(self, status: int, message: str) -> None:
        body = {"error": {"message": message, "type": "server_error", "param": None, "code": None}}
        self._send(status, json.dumps(body))

    def do_GET(self) -> None:
        self._error(404, f"no route GET {self.path}")

    def do_POST(self) -> None:
        stub = self.server.stub
        length = int(self.headers.get("Content-Length") or 0)
        if length > _MAX_BODY:
            self._error(413, "request too large")
            return
        raw = self.rfile.read(length)
        if self.path.rstrip("/") != "/v1/chat/completions":
            self._error(404, f"no route POST {self.path}")
            return
        try:
            request = json.loads(raw)
        except ValueError:
            self._error(400, "request body is not JSON")
            return
        with stub._lock:
            if len(stub.requests) >= _MAX_REQUESTS:
                over = True
            else:
                over = False
                stub.requests.append(request)
                stub.paths.append(self.path)
                stub.headers.append({k.lower(): v for k, v in self.headers.items()})
        if over:
            self._error(429, f"the stub serves at most {_MAX_REQUESTS} requests")
            return
        try:
            reply = stub.reply(request)
        except Exception as e:  # a broken script becomes a 500 the test can see
            self._error(500, f"stub reply script failed: {type(e).__name__}: {e}")
            return
        if isinstance(reply, StubHTTPError):
            self._error(reply.status, reply.message)
            return
        if isinstance(reply, RawReply):
            self._send(200, reply.body)
            return
        completion = _completion(request, reply, stub._next_id())
        if not request.get("stream"):
            self._send(200, json.dumps(completion, ensure_ascii=False))
            return
        events = "".join(f"data: {json.dumps(c, ensure_ascii=False)}\n\n" for c in _chunks(completion))
        self._send(200, events + "data: [DONE]\n\n", "text/event-stream")


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        host, port = self.server_address[:2]
        self.stub = OpenAIStub(url=f"http://{host!s}:{port}/v1")


class running_openai_stub:  # noqa: N801 - used like a function: ``with running_openai_stub() as stub``
    """Context manager: a stub on a free 127.0.0.1 port, served by one background thread."""

    def __enter__(self) -> OpenAIStub:
        self._server = _Server()
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        self._thread.start()
        return self._server.stub

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)


@pytest.fixture
def openai_stub() -> Iterator[OpenAIStub]:
    """A fresh OpenAI-compatible stub per test; stopped at teardown."""
    with running_openai_stub() as stub:
        yield stub
