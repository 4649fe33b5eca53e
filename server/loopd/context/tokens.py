"""A deterministic token estimate: ceil(JSON bytes / 4).

Used wherever a decision needs a size before the provider has said one (the seed's
rule for compaction's selection). Deterministic, so the same history always cuts at
the same place, and cheap, because each message is estimated once, when it is
appended (`loopd.context.view`). The provider's own count corrects it: see
`loopd.context.view.ContextView.calibrate`.
"""

from __future__ import annotations

import json
from collections.abc import Iterable

from loopd.protocol.messages import Message, message_to_json
from loopd.protocol.model import ToolSpec

BYTES_PER_TOKEN = 4


def estimate_text(text: str) -> int:
    return -(-len(text.encode()) // BYTES_PER_TOKEN)


def estimate_message(message: Message) -> int:
    body = json.dumps(message_to_json(message), ensure_ascii=False, separators=(",", ":"))
    return estimate_text(body)


def estimate_tools(tools: Iterable[ToolSpec]) -> int:
    return sum(
        estimate_text(
            json.dumps(
                {"name": t.name, "description": t.description, "schema": dict(t.input_schema)},
                ensure_ascii=False,
                separators=(",", ":"),
                default=dict,
            )
        )
        for t in tools
    )
