"""ACP over a WebSocket on the same `/acp` endpoint: one connection, each message a
text frame, the token required before the upgrade."""

from __future__ import annotations

import asyncio
import json
import ssl
from typing import Any

import pytest
import wsproto
import wsproto.events as ws

from loopd.testing.llm_script import Reply
from tests.e2e.acp.conftest import Home
from tests.e2e.remote.conftest import Server
from tests.e2e.remote.test_refusals import pinned

pytestmark = pytest.mark.e2e


class Socket:
    """A minimal WebSocket client (wsproto over asyncio's TLS streams)."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader, self.writer = reader, writer
        self.ws = wsproto.WSConnection(wsproto.ConnectionType.CLIENT)
        self.inbox: list[Any] = []

    @classmethod
    async def open(cls, server: Server, context: ssl.SSLContext, bearer: str) -> Socket:
        reader, writer = await asyncio.open_connection("127.0.0.1", server.port, ssl=context)
        sock = cls(reader, writer)
        headers = [(b"authorization", f"Bearer {bearer}".encode())]
        await sock._send(ws.Request(host="127.0.0.1", target="/acp", extra_headers=headers))
        return sock

    async def _send(self, event: Any) -> None:
        self.writer.write(self.ws.send(event))
        await self.writer.drain()

    async def event(self) -> Any:
        while not self.inbox:
            data = await asyncio.wait_for(self.reader.read(65536), 60)
            self.ws.receive_data(data or None)
            self.inbox.extend(self.ws.events())
        return self.inbox.pop(0)

    async def send(self, message: dict[str, Any]) -> None:
        await self._send(ws.Message(data=json.dumps(message)))

    async def message(self) -> dict[str, Any]:
        while True:
            event = await self.event()
            if isinstance(event, ws.TextMessage):
                found: dict[str, Any] = json.loads(event.data)
                return found
            assert not isinstance(event, ws.CloseConnection), event

    async def until_answer(self, rid: int) -> tuple[dict[str, Any], list[dict[str, Any]]]:
        seen = []
        while (message := await self.message()).get("id") != rid or "method" in message:
            seen.append(message)
        return message, seen


async def test_a_turn_over_a_websocket(home: Home, server: Server) -> None:
    home.fake.script("*", Reply(text="over the socket"))
    sock = await Socket.open(server, pinned(home), server.token)
    assert isinstance(await sock.event(), ws.AcceptConnection)
    await sock.send({"jsonrpc": "2.0", "id": 1, "method": "initialize",
                     "params": {"protocolVersion": 1}})  # fmt: skip
    init, _ = await sock.until_answer(1)
    assert init["result"]["protocolVersion"] == 1
    await sock.send({"jsonrpc": "2.0", "id": 2, "method": "session/new",
                     "params": {"cwd": str(home.work), "mcpServers": []}})  # fmt: skip
    new, _ = await sock.until_answer(2)
    sid = new["result"]["sessionId"]
    await sock.send({"jsonrpc": "2.0", "id": 3, "method": "session/prompt", "params": {
        "sessionId": sid, "prompt": [{"type": "text", "text": "hi"}]}})  # fmt: skip
    done, seen = await sock.until_answer(3)
    assert done["result"]["stopReason"] == "end_turn"
    chunks = [
        m["params"]["update"]["content"]["text"]
        for m in seen
        if m.get("method") == "session/update"
        and m["params"]["update"]["sessionUpdate"] == "agent_message_chunk"
    ]
    assert "".join(chunks) == "over the socket"


async def test_a_websocket_without_the_token_is_refused(home: Home, server: Server) -> None:
    sock = await Socket.open(server, pinned(home), "loopd_wrong")
    refused = await sock.event()
    assert isinstance(refused, ws.RejectConnection)
    assert refused.status_code == 403
