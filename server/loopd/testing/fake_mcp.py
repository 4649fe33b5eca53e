"""A tiny MCP server for tests, over stdio or streamable HTTP, with the same tools.

Tools: `echo {text}` (text plus structured content; annotated read-only),
`fail {}` (an `isError` result), `hang {}` (never answers), `env {name}` (the value of
an environment variable in the server, to see what leaked in), `spawn {}` (starts a
grandchild that sleeps, and answers its pid, to see that closing kills it),
`picture {}` (a caption and a PNG image), `grow {}` (adds the tool `added` and sends
`notifications/tools/list_changed` before its answer), `publish {}` (adds the
resource `mem://notes/late` and sends `notifications/resources/list_changed`
before its answer), `retract {}` (drops `mem://notes/readme` from the list, which
it still serves, and says so the same way). The list comes in pages of two, so clients must follow
`nextCursor`. Prompts: `review {file, focus?}` (a text and the file as an embedded
resource) and `hello {}`. Resources (pages of two as well): a text note, a PNG, a
binary blob and a text past loopd's cap; `resources/read` also answers the unlisted
`mem://hidden/secret`, so a test sees whether a client reads what it was not offered.

stdio (stdlib only, so it runs by path with any interpreter and no PYTHONPATH)::

    python fake_mcp.py [--crash | --silent | --version=REVISION | --no-resources
                        | --endless | --flood=N | --log=FILE]

`--crash` writes a line to stderr and exits 3 before reading anything; `--silent`
reads and never answers; `--version` answers `initialize` with that revision
instead of the one asked for; `--no-resources` declares no resources capability
(and answers no `resources/*` request). To attack a client: `--endless` answers
every `tools/call` with one line that never ends (48 MiB, then silence);
`--flood=N` sends N `tools/list_changed` notices before each `tools/call` answer;
`--log=FILE` appends each request's method to FILE before answering it.

Over HTTP, `FakeMcpHttpServer` listens on 127.0.0.1 port 0, answers `tools/call` as
an SSE stream (notices first, then the answer) and everything else as JSON, hands
out an `Mcp-Session-Id` at `initialize`, refuses a request without one (400) or with
one it no longer knows (404: `expire()` forgets the current one; with `forgetful`
set, every one), and records every request's method and headers, and DELETEs. To
attack a client: `padding` bytes are added to each `tools/call` answer's text, sent
as JSON instead of SSE with `plain`; `failing` answers every request after
`initialize` with an HTTP 500 of that many bytes; notices queued on `fake.notices`
go out before the next answer.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

PAGE = 2
SESSION = "fake-session-1"
PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR4nGNgYPgPAAEDAQAIicLsAAAAAElFTkSuQmCC"
LIST_CHANGED = {"jsonrpc": "2.0", "method": "notifications/tools/list_changed"}
TOOLS: list[dict[str, Any]] = [
    {
        "name": "echo",
        "description": "Echo the text back.",
        "inputSchema": {
            "type": "object",
            "properties": {"text": {"type": "string"}},
            "required": ["text"],
        },
        "annotations": {"readOnlyHint": True, "openWorldHint": False},
    },
    {"name": "fail", "description": "Always fails.", "inputSchema": {"type": "object"}},
    {"name": "hang", "description": "Never answers.", "inputSchema": {"type": "object"}},
    {
        "name": "env",
        "description": "An environment variable of the server.",
        "inputSchema": {"type": "object", "properties": {"name": {"type": "string"}}},
    },
    {"name": "spawn", "description": "Start a sleeping child.", "inputSchema": {"type": "object"}},
    {"name": "picture", "description": "A picture.", "inputSchema": {"type": "object"}},
    {"name": "grow", "description": "Add a tool.", "inputSchema": {"type": "object"}},
    {"name": "publish", "description": "Add a resource.", "inputSchema": {"type": "object"}},
    {"name": "retract", "description": "Unlist a resource.", "inputSchema": {"type": "object"}},
]
ADDED = {"name": "added", "description": "Added by grow.", "inputSchema": {"type": "object"}}
PROMPTS: list[dict[str, Any]] = [
    {
        "name": "review",
        "description": "Review a file.",
        "arguments": [
            {"name": "file", "description": "The file", "required": True},
            {"name": "focus", "description": "What to look at"},
        ],
    },
    {"name": "hello", "description": "Say hello."},
]
NOTE = "The secret word is PAPAYA.\n"
HIDDEN = "HIDDEN-SECRET: never offered, never to be read\n"
BIG = "x" * 150_000
BLOB = "AAECAwQFBgc="  # eight bytes 0..7
RESOURCES: list[dict[str, Any]] = [
    {
        "uri": "mem://notes/readme",
        "name": "readme",
        "title": "The readme",
        "description": "What the project is about.",
        "mimeType": "text/plain",
    },
    {"uri": "mem://images/dot.png", "name": "dot", "mimeType": "image/png"},
    {"uri": "mem://data/blob.bin", "name": "blob", "mimeType": "application/octet-stream"},
    {"uri": "mem://notes/big", "name": "big", "mimeType": "text/plain"},
]
LATE = {"uri": "mem://notes/late", "name": "late", "mimeType": "text/plain"}
CONTENTS: dict[str, dict[str, Any]] = {
    "mem://notes/readme": {"mimeType": "text/plain", "text": NOTE},
    "mem://images/dot.png": {"mimeType": "image/png", "blob": PNG},
    "mem://data/blob.bin": {"mimeType": "application/octet-stream", "blob": BLOB},
    "mem://notes/big": {"mimeType": "text/plain", "text": BIG},
    "mem://notes/late": {"mimeType": "text/plain", "text": "Published later: MANGO\n"},
    "mem://hidden/secret": {"mimeType": "text/plain", "text": HIDDEN},
}
RESOURCES_CHANGED = {"jsonrpc": "2.0", "method": "notifications/resources/list_changed"}
HANG = object()  # the answer of a call that never answers


class Fake:
    """One server's state: its tool and resource lists (which `grow` and `publish`
    change), the revision it answers `initialize` with (None: the one asked for),
    whether it offers resources, the uris it was asked to read, and the notices
    queued to go out before the next answer."""

    def __init__(self, version: str | None = None, resources: bool = True) -> None:
        self.tools = list(TOOLS)
        self.version = version
        self.resources = list(RESOURCES) if resources else None
        self.read: list[str] = []
        self.notices: list[dict[str, Any]] = []

    def answer(self, method: str, params: dict[str, Any]) -> Any:
        """The result of one request; `HANG` for no answer; raises KeyError for an
        unknown method or tool."""
        match method:
            case "initialize":
                capabilities: dict[str, Any] = {"tools": {"listChanged": True}, "prompts": {}}
                if self.resources is not None:
                    capabilities["resources"] = {"listChanged": True}
                return {
                    "protocolVersion": self.version or params.get("protocolVersion"),
                    "capabilities": capabilities,
                    "serverInfo": {"name": "fake-mcp", "version": "0"},
                }
            case "tools/list":
                return _page("tools", self.tools, params)
            case "resources/list" if self.resources is not None:
                return _page("resources", self.resources, params)
            case "resources/read" if self.resources is not None:
                self.read.append(params["uri"])
                return {"contents": [{"uri": params["uri"], **CONTENTS[params["uri"]]}]}
            case "tools/call":
                return self._call(params["name"], params.get("arguments") or {})
            case "prompts/list":
                return {"prompts": PROMPTS}
            case "prompts/get":
                return _prompt(params["name"], params.get("arguments") or {})
            case "ping":
                return {}
        raise KeyError(method)

    def _call(self, name: str, args: dict[str, Any]) -> Any:
        match name:
            case "grow":
                self.tools.append(ADDED)
                self.notices.append(LIST_CHANGED)
                return {"content": [{"type": "text", "text": "grown"}]}
            case "added":
                return {"content": [{"type": "text", "text": "the added tool ran"}]}
            case "publish" if self.resources is not None:
                self.resources.append(LATE)
                self.notices.append(RESOURCES_CHANGED)
                return {"content": [{"type": "text", "text": "published"}]}
            case "retract" if self.resources is not None:
                self.resources = [r for r in self.resources if r["uri"] != "mem://notes/readme"]
                self.notices.append(RESOURCES_CHANGED)
                return {"content": [{"type": "text", "text": "retracted"}]}
            case "picture":
                image = {"type": "image", "data": PNG, "mimeType": "image/png"}
                return {"content": [{"type": "text", "text": "a red dot"}, image]}
        return _call(name, args)

    def reply_to(self, message: dict[str, Any]) -> dict[str, Any] | None:
        """The JSON-RPC reply to one message (None for a notice or a hanging call)."""
        if "method" not in message or "id" not in message:
            return None
        try:
            result = self.answer(message["method"], message.get("params") or {})
        except KeyError as err:
            error = {"code": -32601, "message": f"unknown: {err}"}
            return {"jsonrpc": "2.0", "id": message["id"], "error": error}
        if result is HANG:
            return None
        return {"jsonrpc": "2.0", "id": message["id"], "result": result}

    def take_notices(self) -> list[dict[str, Any]]:
        notices, self.notices = self.notices, []
        return notices


def _page(kind: str, entries: list[dict[str, Any]], params: dict[str, Any]) -> Any:
    start = int(params.get("cursor") or 0)
    page: dict[str, Any] = {kind: entries[start : start + PAGE]}
    if start + PAGE < len(entries):
        page["nextCursor"] = str(start + PAGE)
    return page


def _prompt(name: str, args: dict[str, str]) -> Any:
    match name:
        case "review":
            text = f"Review {args['file']}, focusing on {args.get('focus', 'everything')}."
            resource = {"uri": f"file:///{args['file']}", "text": "print(1)\n"}
            messages = [
                {"role": "user", "content": {"type": "text", "text": text}},
                {"role": "user", "content": {"type": "resource", "resource": resource}},
            ]
            return {"messages": messages}
        case "hello":
            return {"messages": [{"role": "user", "content": {"type": "text", "text": "Hello!"}}]}
    raise KeyError(name)


def _call(name: str, args: dict[str, Any]) -> Any:
    match name:
        case "echo":
            text = f"echo: {args['text']}"
            return {"content": [{"type": "text", "text": text}], "structuredContent": args}
        case "fail":
            return {"content": [{"type": "text", "text": "it failed on purpose"}], "isError": True}
        case "hang":
            return HANG
        case "env":
            value = os.environ.get(args["name"], "")
            return {"content": [{"type": "text", "text": f"{args['name']}={value}"}]}
        case "spawn":
            child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
            return {"content": [{"type": "text", "text": str(child.pid)}]}
    raise KeyError(name)


def serve_stdio(
    fake: Fake, silent: bool, endless: bool = False, flood: int = 0, log: str = ""
) -> None:
    for line in sys.stdin:
        if not line.strip() or silent:
            continue
        message = json.loads(line)
        if log and "id" in message:
            with open(log, "a") as said:
                said.write(f"{message.get('method')}\n")
        calling = message.get("method") == "tools/call"
        if calling and endless:
            sys.stdout.write('{"jsonrpc": "2.0", "id": 1, "result": "' + "x" * (48 << 20))
            sys.stdout.flush()
            sys.stdin.read()  # silent until loopd lets go
            return
        if calling:
            fake.notices.extend([LIST_CHANGED] * flood)
        reply = fake.reply_to(message)
        out = [*fake.take_notices(), *([reply] if reply is not None else [])]
        for message in out:
            sys.stdout.write(json.dumps(message) + "\n")
        sys.stdout.flush()


class FakeMcpHttpServer:
    """The HTTP flavour; `url` is its endpoint. Use as a context manager."""

    def __init__(self, version: str | None = None, resources: bool = True) -> None:
        self.fake = Fake(version, resources)
        self.session: str | None = None  # the one it knows; a new one at each initialize
        self.forgetful = False
        self.padding = 0
        self.plain = False
        self.failing = 0
        self.started = 0
        self.requests: list[tuple[str, dict[str, str]]] = []  # (method, lower headers)
        self.deleted: list[str] = []
        self.closing = threading.Event()
        self._http = ThreadingHTTPServer(("127.0.0.1", 0), _handler_for(self))
        self._http.daemon_threads = True
        self._thread = threading.Thread(target=self._http.serve_forever, args=(0.01,), daemon=True)

    @property
    def url(self) -> str:
        host, port = self._http.server_address[:2]
        return f"http://{host!s}:{port}/mcp"

    def expire(self) -> None:
        """Forget the session: a request naming it is answered 404; the next
        `initialize` starts a new one."""
        self.session = None

    def __enter__(self) -> FakeMcpHttpServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.closing.set()
        self._http.shutdown()
        self._http.server_close()


def _handler_for(fake: FakeMcpHttpServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:
            pass

        def do_DELETE(self) -> None:
            fake.deleted.append(self.headers.get("Mcp-Session-Id", ""))
            self._send(200, b"", {})

        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
            message = json.loads(body)
            method = message.get("method", "(answer)")
            fake.requests.append((method, {k.lower(): v for k, v in self.headers.items()}))
            if method == "initialize":
                fake.started += 1
                fake.session = f"fake-session-{fake.started}"
            elif (given := self.headers.get("Mcp-Session-Id")) != fake.session or fake.forgetful:
                status = 400 if given is None else 404
                self._send(status, b'{"error": "no session"}', {"Content-Type": "application/json"})
                return
            elif fake.failing and "id" in message:
                self._send_endlessly(500, fake.failing)
                return
            reply = fake.fake.reply_to(message)
            if reply is not None and method == "tools/call" and "result" in reply:
                reply["result"]["content"][0]["text"] += "p" * fake.padding
            if reply is None and method == "tools/call":
                fake.closing.wait(30)  # a hanging call: held until the test ends
            if reply is None:
                self._send(202, b"", {})
            elif method == "tools/call" and not fake.plain:
                notice = {"jsonrpc": "2.0", "method": "notifications/message", "params": {}}
                out = (notice, *fake.fake.take_notices(), reply)
                events = "".join(f"event: message\ndata: {json.dumps(m)}\n\n" for m in out)
                self._send(200, events.encode(), {"Content-Type": "text/event-stream"})
            else:
                session = fake.session or ""
                extra = {"Mcp-Session-Id": session} if method == "initialize" else {}
                headers = {"Content-Type": "application/json", **extra}
                self._send(200, json.dumps(reply).encode(), headers)

        def _send_endlessly(self, status: int, size: int) -> None:
            """`size` bytes of body, in pieces, until sent or the client hangs up."""
            self.send_response(status)
            self.send_header("Content-Type", "text/plain")
            self.send_header("Content-Length", str(size))
            self.end_headers()
            piece = b"e" * 65536
            try:
                for _ in range(size // len(piece)):
                    self.wfile.write(piece)
            except OSError:
                self.close_connection = True

        def _send(self, status: int, data: bytes, headers: dict[str, str]) -> None:
            self.send_response(status)
            for key, value in headers.items():
                self.send_header(key, value)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

    return Handler


def main() -> None:
    if "--crash" in sys.argv:
        sys.stderr.write("boom: the fake server was told to crash\n")
        sys.exit(3)
    versions = [a.removeprefix("--version=") for a in sys.argv if a.startswith("--version=")]
    fake = Fake(versions[-1] if versions else None, resources="--no-resources" not in sys.argv)
    floods = [int(a.removeprefix("--flood=")) for a in sys.argv if a.startswith("--flood=")]
    logs = [a.removeprefix("--log=") for a in sys.argv if a.startswith("--log=")]
    endless = "--endless" in sys.argv
    flood = floods[-1] if floods else 0
    serve_stdio(fake, "--silent" in sys.argv, endless, flood, logs[-1] if logs else "")


if __name__ == "__main__":
    main()
