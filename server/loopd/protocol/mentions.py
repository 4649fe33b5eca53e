"""Context a session offers to be @-mentioned in a prompt: its MCP servers' resources.

An editor lists them (`loopd/session/mentions` in the LSP extension) and puts the
one the person picks in the prompt as an ACP `resource_link` block with its `uri`;
the session reads it in before the model sees the prompt (`loopd.engine.ports.Mentions`).
A mention is the wire's own model (`loopd.protocol.wire.shapes.Mention`), written once.
"""

from __future__ import annotations

from typing import Any

from loopd.protocol.wire.shapes import Mention


def mention_to_wire(mention: Mention) -> dict[str, Any]:
    """The JSON of one mention (camelCase, absent fields left out)."""
    return mention.model_dump(by_alias=True, exclude_none=True)
