"""Context a session offers to be @-mentioned in a prompt: its MCP servers' resources.

An editor lists them (`loopd/session/mentions` in the LSP extension) and puts the
one the person picks in the prompt as an ACP `resource_link` block with its `uri`;
the session reads it in before the model sees the prompt (`loopd.engine.ports.Mentions`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class Mention:
    """One mentionable resource: `server` offers `uri`, shown as `title` or `name`."""

    server: str
    uri: str
    name: str
    title: str | None = None
    description: str | None = None
    mime_type: str | None = None


def mention_to_wire(mention: Mention) -> dict[str, Any]:
    """The JSON of one mention (camelCase, absent fields left out)."""
    out: dict[str, Any] = {"server": mention.server, "uri": mention.uri, "name": mention.name}
    optional = {
        "title": mention.title,
        "description": mention.description,
        "mimeType": mention.mime_type,
    }
    out.update({k: v for k, v in optional.items() if v is not None})
    return out
