"""A loopback fake LLM server speaking the real streaming wire formats.

`FakeLLMServer` listens on 127.0.0.1 (port 0 by default) and answers

    POST /v1/messages           Anthropic Messages (SSE)
    POST /v1/chat/completions   OpenAI Chat Completions (SSE, `data: [DONE]`)
    POST /v1/responses          OpenAI Responses (SSE)
    POST /v1/messages/count_tokens  Anthropic token counting (answered from the size)
    GET  /v1/models             the model list (`models`; 401 unless a key in `keys`;
                                404 with `models = None`)

The POST routes answer from a queue of scripted steps per route (see
`loopd.testing.llm_script`), falling back to the shared queue `"*"`, whose steps are
rendered in the format of whichever route asked: one script drives any provider.
`models = []` makes the model list empty, as a server with nothing loaded answers.
Every request is recorded (path,
lower-cased headers, JSON body) so tests assert what was sent. An exhausted queue
answers 400 with a message saying so. Point providers at `base_url` (Anthropic) or
`base_url + "/v1"` (OpenAI).

A window makes the fake a model with a small context: `FakeLLMServer(window=N)`
answers any request whose estimated size (ceil(body bytes / 4), the same rule as
loopd's own estimate) exceeds N tokens with that format's real overflow error
("prompt is too long: X tokens > N maximum" from Anthropic, `context_length_exceeded`
"maximum context length is N tokens" from OpenAI), without using up a scripted step;
a reply it does send reports the estimate as its input tokens. With
`holds_output=True` the output a request asks for (`max_tokens`) counts against the
window too, as the real services count it, and the error names both figures.
`responder`, when given, answers every request the queues have nothing for (long
scripted sessions whose compaction requests come at times the test does not fix).

Two control routes serve tests in another process: `GET /_fake/requests` returns
the recorded requests as JSON, `POST /_fake/release/NAME` releases a gate.

From another process::

    python -m loopd.testing.fake_llm --script FILE.json [--port N]

prints its base URL as the first line of stdout, then serves until killed.
`--window N` gives it an N-token window; `--long-session WORDS` answers whatever the
script does not with `loopd.testing.long_session` (replies of WORDS words). The
script file maps a route (or `"*"`) to a list of steps::

    {
      "*": [
        {"thinking": "Look first.", "tool_calls": [{"name": "read", "input": {"path": "a.py"}}]},
        {"text": "Done.", "chunk": 1, "pings": true}
      ],
      "/v1/messages": [
        {"error": "rate_limited", "retry_after": 2},
        {"text": "Partial", "fail": "overloaded"},
        {"text": "slow", "pause_after": 2, "gate": "go"},
        {"raw": [["ping", {"type": "ping"}], [null, "[DONE]"]]}
      ]
    }

A reply step takes the `Reply` fields (`text`, `thinking`, `signature`,
`tool_calls` [{`name`, `input`, `id`, `raw_arguments`}], `stop`, `input_tokens`,
`output_tokens`, `cached_tokens`, and delivery: `chunk`, `pings`, `unknown_events`,
`fail`, `drop_after`, `pause_after`, `gate`, `stall`). An error step is
`{"error": KIND}` plus `status`, `retry_after`, `retry_after_ms`, `message`, with
KIND one of rate_limited, overloaded, server_error, context_overflow, auth,
bad_request. A raw step is `{"raw": [[event or null, data], ...], "chunk": N}`.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
import threading
from collections import defaultdict, deque
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, replace
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from loopd.testing.llm_errors import overflow_message
from loopd.testing.llm_script import (
    HttpError,
    RawStream,
    RecordedRequest,
    Reply,
    ScriptedCall,
    Step,
    steps_from_json,
)
from loopd.testing.llm_wire import ANTHROPIC, OPENAI_CHAT, OPENAI_RESPONSES, WIRES, Wire, sse
from loopd.testing.long_session import LongSession

ANY_ROUTE = "*"
COUNT_TOKENS = "/v1/messages/count_tokens"


class _Listener(ThreadingHTTPServer):
    """A listen backlog for many clients at once. socketserver's default is 5: with
    60 streams opening together the kernel dropped the rest of the handshakes, and
    each dropped client waited for its SYN to be sent again (1 s, then 3 s, 7 s):
    a load benchmark measured the fake's backlog, not the client."""

    request_queue_size = 1024


class FakeLLMServer:
    """Scripted loopback LLM endpoint. Use as a context manager (sync, so it also
    works inside async tests) or call `start` and `close`."""

    def __init__(
        self,
        host: str = "127.0.0.1",
        port: int = 0,
        window: int | None = None,
        responder: Callable[[RecordedRequest], Step] | None = None,
        holds_output: bool = False,
    ) -> None:
        self.window = window
        self.holds_output = holds_output
        self.responder = responder
        self._queues: dict[str, deque[Step]] = defaultdict(deque)
        self._requests: list[RecordedRequest] = []
        self._gates: dict[str, threading.Event] = {}
        self._lock = threading.Lock()
        self.closing = threading.Event()
        self.models: list[str] | None = ["fake-model"]
        """What `GET /v1/models` lists (the endpoint login checks a key with); `None`
        answers 404, as a gateway without a model list does."""
        self.keys: set[str] | None = None
        """When set, `GET /v1/models` answers 401 unless one of these keys is sent."""
        self._httpd = _Listener((host, port), _handler_for(self))
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(target=self._serve, name="fake-llm", daemon=True)

    @property
    def base_url(self) -> str:
        host, port = self._httpd.server_address[:2]
        return f"http://{host!s}:{port}"

    @property
    def openai_base_url(self) -> str:
        return self.base_url + "/v1"

    def script(self, route: str, *steps: Step) -> None:
        with self._lock:
            self._queues[route].extend(steps)

    def model_list(self) -> dict[str, Any]:
        """The `GET /v1/models` body, in OpenAI's shape (which Ollama and vLLM copy)."""
        models = self.models or []
        data = [{"id": m, "object": "model", "created": 0, "owned_by": "fake"} for m in models]
        return {"object": "list", "data": data}

    def load(self, script: Mapping[str, Sequence[Step]]) -> None:
        for route, steps in script.items():
            self.script(route, *steps)

    def release(self, gate: str) -> None:
        self.gate(gate).set()

    def gate(self, name: str) -> threading.Event:
        with self._lock:
            return self._gates.setdefault(name, threading.Event())

    @property
    def requests(self) -> list[RecordedRequest]:
        with self._lock:
            return list(self._requests)

    def pending(self, route: str = ANY_ROUTE) -> int:
        with self._lock:
            return len(self._queues[route])

    def start(self) -> FakeLLMServer:
        self._thread.start()
        return self

    def close(self) -> None:
        self.closing.set()
        for event in list(self._gates.values()):
            event.set()
        self._httpd.shutdown()
        self._httpd.server_close()

    def __enter__(self) -> FakeLLMServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()

    def held_output(self, body: Mapping[str, Any]) -> int | None:
        """The output a request asks for, when the window holds it too."""
        value = body.get("max_tokens") or body.get("max_output_tokens")
        return value if self.holds_output and isinstance(value, int) else None

    def record(self, request: RecordedRequest) -> None:
        with self._lock:
            self._requests.append(request)

    def next_step(self, route: str, request: RecordedRequest) -> Step | None:
        with self._lock:
            for queue in (self._queues[route], self._queues[ANY_ROUTE]):
                if queue:
                    return queue.popleft()
        return None if self.responder is None else self.responder(request)

    def _serve(self) -> None:
        self._httpd.serve_forever(poll_interval=0.01)


def _handler_for(fake: FakeLLMServer) -> type[BaseHTTPRequestHandler]:
    class Handler(_Handler):
        server_fake = fake

    return Handler


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_fake: FakeLLMServer

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet: tests read the recorded requests instead."""

    def do_GET(self) -> None:
        fake = self.server_fake
        if self.path.split("?", 1)[0] == "/v1/models":
            fake.record(
                RecordedRequest(self.path, {k.lower(): v for k, v in self.headers.items()}, {})
            )
            if fake.models is None:
                self._json(404, {"error": {"message": "Not Found"}})
            elif fake.keys is not None and self._key() not in fake.keys:
                self._json(401, {"error": {"type": "authentication_error", "message": "bad key"}})
            else:
                self._json(200, fake.model_list())
            return
        if self.path != "/_fake/requests":
            self._json(404, {"error": {"message": f"no route {self.path}"}})
            return
        self._json(200, [asdict(r) for r in fake.requests])

    def _key(self) -> str:
        bearer = self.headers.get("authorization", "").removeprefix("Bearer ")
        return self.headers.get("x-api-key") or bearer

    def do_POST(self) -> None:
        length = int(self.headers.get("content-length") or 0)
        raw = self.rfile.read(length) if length else b""
        if self.path.startswith("/_fake/release/"):
            self.server_fake.release(self.path.removeprefix("/_fake/release/"))
            self._json(200, {})
            return
        body = json.loads(raw) if raw else {}
        headers = {k.lower(): v for k, v in self.headers.items()}
        request = RecordedRequest(self.path, headers, body, len(raw))
        self.server_fake.record(request)
        route = self.path.split("?", 1)[0]  # Claude Code posts /v1/messages?beta=true
        if route == COUNT_TOKENS:  # unscripted: it answers as the API does, from the size
            self._json(200, {"input_tokens": max(1, len(raw) // 4)})
            return
        wire_type = WIRES.get(route)
        if wire_type is None:
            self._json(404, {"error": {"message": f"no route {self.path}"}})
            return
        wire = wire_type(str(body.get("model") or "fake-model"))
        tokens = -(-len(raw) // 4)
        window, output = self.server_fake.window, self.server_fake.held_output(body)
        try:
            if window is not None and tokens + (output or 0) > window:
                said = overflow_message(route == ANTHROPIC, tokens, window, output)
                self._json(*wire.error_body("context_overflow", said))
            else:
                step = self.server_fake.next_step(route, request)
                self._answer(wire, step if window is None else _sized(step, tokens))
        except (BrokenPipeError, ConnectionResetError):
            request.disconnected = True
        self.close_connection = True

    def _answer(self, wire: Wire, step: Step | None) -> None:
        match step:
            case None:
                message = f"fake LLM: no scripted reply left for {self.path}"
                self._json(*wire.error_body("bad_request", message))
            case HttpError():
                status, body = wire.error_body(step.kind, step.message)
                self._json(step.status or status, body, _retry_headers(step))
            case Reply():
                self._stream(wire.render(step), step)
            case RawStream(events, chunk):
                self._stream([sse(e, d) for e, d in events], Reply(chunk=chunk))

    def _stream(self, frames: list[str], reply: Reply) -> None:
        self.send_response(200)
        self.send_header("content-type", "text/event-stream; charset=utf-8")
        self.send_header("cache-control", "no-cache")
        self.send_header("connection", "close")  # the body ends when the connection does
        self.end_headers()
        self.wfile.flush()
        stop = len(frames) if reply.drop_after is None else reply.drop_after
        for i, frame in enumerate(frames[:stop]):
            if i == reply.pause_after:
                self._pause(reply)
            self._write(frame.encode(), reply.chunk)
        if reply.pause_after >= stop:
            self._pause(reply)

    def _pause(self, reply: Reply) -> None:
        fake = self.server_fake
        if reply.gate:
            fake.gate(reply.gate).wait()
        if reply.stall:
            fake.closing.wait(reply.stall)

    def _write(self, data: bytes, chunk: int) -> None:
        step = chunk or len(data)
        for i in range(0, len(data), step):
            self.wfile.write(data[i : i + step])
            self.wfile.flush()

    def _json(self, status: int, body: object, headers: Mapping[str, str] | None = None) -> None:
        raw = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(raw)))
        self.send_header("connection", "close")
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(raw)


def _sized(step: Step | None, tokens: int) -> Step | None:
    """A reply reports the request's real size as its input tokens."""
    return replace(step, input_tokens=tokens) if isinstance(step, Reply) else step


def _retry_headers(error: HttpError) -> dict[str, str]:
    headers = {}
    if error.retry_after is not None:
        headers["retry-after"] = f"{error.retry_after:g}"
    if error.retry_after_ms is not None:
        headers["retry-after-ms"] = str(error.retry_after_ms)
    return headers


def load_script(path: Path) -> dict[str, list[Step]]:
    """Read a JSON script file (format in the module docstring)."""
    data = json.loads(path.read_text())
    if not isinstance(data, dict):
        raise ValueError(f"{path}: expected an object mapping routes to lists of steps")
    return {route: steps_from_json(steps) for route, steps in data.items()}


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m loopd.testing.fake_llm")
    parser.add_argument("--script", type=Path, help="JSON script (see the module docstring)")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--window", type=int, help="overflow above this many tokens")
    parser.add_argument("--long-session", type=int, metavar="WORDS", help="reply length")
    args = parser.parse_args(argv)
    responder = None
    if args.long_session:
        responder = LongSession(reply_words=args.long_session).respond
    fake = FakeLLMServer(args.host, args.port, window=args.window, responder=responder)
    if args.script:
        fake.load(load_script(args.script))
    with fake:
        sys.stdout.write(fake.base_url + "\n")
        sys.stdout.flush()
        with contextlib.suppress(KeyboardInterrupt):
            threading.Event().wait()
    return 0


__all__ = [
    "ANTHROPIC",
    "ANY_ROUTE",
    "OPENAI_CHAT",
    "OPENAI_RESPONSES",
    "FakeLLMServer",
    "HttpError",
    "RawStream",
    "RecordedRequest",
    "Reply",
    "ScriptedCall",
    "Step",
    "load_script",
    "main",
]

if __name__ == "__main__":
    sys.exit(main())
