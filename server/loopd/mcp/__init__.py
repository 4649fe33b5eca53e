"""A small MCP client: the editor's MCP servers, their tools offered to the native
engine.

JSON-RPC 2.0 over two transports (`stdio`: a child process, one message per line;
`http`: streamable HTTP, JSON or SSE replies), the handshake (known revisions only;
again once when an HTTP session expires), the methods loopd needs (`tools/list`,
`tools/call`, `prompts/list`, `prompts/get`, `resources/list`, `resources/read`),
the tools wrapped as loopd tools, the prompts as slash commands under namespaced
names, the resources as @-mentionable context, and tool and resource lists that
change while the session lives. `McpServers.connect` is the entry point; `loopd.app` calls
it when a native session opens.
"""

from loopd.mcp.client import McpClient, McpTimeouts
from loopd.mcp.prompts import McpPrompt
from loopd.mcp.resources import McpResource
from loopd.mcp.rpc import McpClosed, McpError, McpExpired, McpTimeout
from loopd.mcp.servers import McpServers
from loopd.mcp.tools import McpTool, tool_name

__all__ = [
    "McpClient",
    "McpClosed",
    "McpError",
    "McpExpired",
    "McpPrompt",
    "McpResource",
    "McpServers",
    "McpTimeout",
    "McpTimeouts",
    "McpTool",
    "tool_name",
]
