"""Editors on the wire, for the load benchmark: a spawned `loopd acp` (NDJSON) or
`loopd lsp` (Content-Length frames, with the `experimental.loopd` extension)
driven over raw JSON-RPC, many requests in flight at once.

Each editor keeps, per session, the text of every `agent_message_chunk` it was
sent, in arrival order, and when the first of the current turn came. Requests the
agent makes (an LSP server's registrations, an ACP permission) are answered at
once: nothing in the benchmark asks for approval.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

Protocol = Literal["acp", "lsp"]
METHODS: dict[Protocol, dict[str, str]] = {
    "acp": {op: f"session/{op}" for op in ("new", "load", "list", "prompt")}
    | {"update": "session/update"},
    "lsp": {op: f"loopd/session/{op}" for op in ("new", "load", "list", "prompt")}
    | {"update": "loopd/session/update"},
}
LSP_CAPABILITIES = {"experimental": {"loopd": True}}


@dataclass(slots=True)
class Stream:
    """What one session's editor saw of its turns."""

    chunks: list[str] = field(default_factory=list)  # every agent chunk, in order
    mark: int = 0  # where the current turn's chunks begin
    sent: float = 0.0  # the current turn's prompt, perf_counter
    first: float | None = None  # its first chunk

    @property
    def turn(self) -> list[str]:
        """The current (or last) turn's chunks."""
        return self.chunks[self.mark :]


@dataclass(eq=False, slots=True)
class Editor:
    protocol: Protocol
    proc: asyncio.subprocess.Process
    streams: dict[str, Stream] = field(default_factory=dict)
    _waiting: dict[int, asyncio.Future[dict[str, Any]]] = field(default_factory=dict)
    _ids: itertools.count[int] = field(default_factory=lambda: itertools.count(1))
    _reader: asyncio.Task[None] | None = None

    @classmethod
    async def spawn(
        cls, argv: list[str], protocol: Protocol, env: Mapping[str, str], cwd: Path
    ) -> Editor:
        proc = await asyncio.create_subprocess_exec(
            *argv, protocol, env=dict(env), cwd=cwd, limit=64 << 20,
            stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.DEVNULL,
        )  # fmt: skip
        editor = cls(protocol, proc)
        editor._reader = asyncio.create_task(editor._read())
        if protocol == "acp":
            await editor.call("initialize", {"protocolVersion": 1})
        else:
            params = {"processId": None, "rootUri": None, "capabilities": LSP_CAPABILITIES}
            await editor.call("initialize", params)
            await editor._send({"method": "initialized", "params": {}})
        return editor

    async def call(self, method: str, params: Mapping[str, Any]) -> dict[str, Any]:
        rid = next(self._ids)
        answer = self._waiting[rid] = asyncio.get_running_loop().create_future()
        await self._send({"id": rid, "method": method, "params": dict(params)})
        message = await answer
        if "error" in message:
            raise RuntimeError(f"{self.protocol} {method}: {message['error']}")
        result: dict[str, Any] = message["result"] or {}
        return result

    async def session(self, op: str, params: Mapping[str, Any]) -> dict[str, Any]:
        """`session/OP` (ACP) or `loopd/session/OP` (LSP)."""
        return await self.call(METHODS[self.protocol][op], params)

    async def new(self, cwd: Path) -> str:
        sid: str = (await self.session("new", {"cwd": str(cwd), "mcpServers": []}))["sessionId"]
        self.streams[sid] = Stream()
        return sid

    async def prompt(self, sid: str, text: str) -> float:
        """One turn; the perf_counter time its answer came."""
        stream = self.streams.setdefault(sid, Stream())
        stream.sent, stream.first, stream.mark = time.perf_counter(), None, len(stream.chunks)
        await self.session("prompt", {"sessionId": sid, "prompt": [{"type": "text", "text": text}]})
        return time.perf_counter()

    async def close(self) -> None:
        assert self.proc.stdin is not None
        with contextlib.suppress(OSError):
            self.proc.stdin.close()
        try:
            await asyncio.wait_for(self.proc.wait(), 30)
        except TimeoutError:
            self.proc.kill()
            await self.proc.wait()
        if self._reader is not None:
            self._reader.cancel()

    async def _send(self, message: dict[str, Any]) -> None:
        assert self.proc.stdin is not None
        body = json.dumps({"jsonrpc": "2.0", **message}).encode()
        if self.protocol == "lsp":
            body = b"Content-Length: %d\r\n\r\n%s" % (len(body), body)
        else:
            body += b"\n"
        self.proc.stdin.write(body)
        await self.proc.stdin.drain()

    async def _message(self) -> dict[str, Any] | None:
        out = self.proc.stdout
        assert out is not None
        if self.protocol == "acp":
            line = await out.readline()
            return json.loads(line) if line else None
        length = 0
        while (line := await out.readline()) not in (b"\r\n", b""):
            name, _, value = line.partition(b":")
            length = int(value) if name.lower() == b"content-length" else length
        return json.loads(await out.readexactly(length)) if line else None

    async def _read(self) -> None:
        update = METHODS[self.protocol]["update"]
        while (message := await self._message()) is not None:
            method = message.get("method")
            if method == update:
                self._saw(message["params"])
            elif method is not None and "id" in message:
                await self._answer(message)
            elif method is None and (answer := self._waiting.pop(message["id"], None)):
                answer.set_result(message)
        for answer in self._waiting.values():
            answer.set_exception(RuntimeError(f"loopd {self.protocol} closed its stdout"))

    def _saw(self, params: dict[str, Any]) -> None:
        update = params["update"]
        if update.get("sessionUpdate") != "agent_message_chunk":
            return
        stream = self.streams.setdefault(params["sessionId"], Stream())
        if stream.first is None:
            stream.first = time.perf_counter()
        stream.chunks.append(update["content"]["text"])

    async def _answer(self, request: dict[str, Any]) -> None:
        if self.protocol == "lsp":
            await self._send({"id": request["id"], "result": None})
        else:
            error = {"code": -32601, "message": "the benchmark answers nothing"}
            await self._send({"id": request["id"], "error": error})
