"""The daemon rehearses `initialize` when it loads the LSP stack: in memory, with no
manager, ending by itself with a real answer."""

from __future__ import annotations

import asyncio
import json

from loopd.lsp.server import rehearse


async def test_a_rehearsal_answers_initialize_and_ends() -> None:
    answer = await asyncio.wait_for(rehearse(), 30)
    header, _, body = answer.partition(b"\r\n\r\n")
    assert header.startswith(b"Content-Length: ")
    result = json.loads(body)["result"]
    assert result["serverInfo"]["name"] == "loopd"
    assert "capabilities" in result
