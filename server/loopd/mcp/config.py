"""The editor's MCP servers as loopd holds them: one `McpServerConfig` each.

Vocabulary only (no I/O): the frontends build it from their wire (`session/new`'s
`mcpServers`, `loopd/newSession`), the session layer keeps it for a runtime switch,
the runtimes hand it on (the MCP client here, a CLI's own config, a child agent's
`session/new`). It sits in `mcp/`, below all of them, so none climbs to reach it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field


@dataclass(frozen=True, slots=True)
class McpServerConfig:
    """An MCP server handed over by the editor: stdio (`command`) or http (`url`)."""

    name: str
    command: str | None = None
    args: tuple[str, ...] = ()
    env: Mapping[str, str] = field(default_factory=dict)
    url: str | None = None
    headers: Mapping[str, str] = field(default_factory=dict)
