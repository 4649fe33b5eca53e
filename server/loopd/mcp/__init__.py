"""A small MCP client: the editor's MCP servers, their tools offered to the native
engine.

JSON-RPC 2.0 over two transports (`stdio`: a child process, one message per line;
`http`: streamable HTTP, JSON or SSE replies), the handshake and the two methods
loopd needs (`tools/list`, `tools/call`), and the tools wrapped as loopd tools under
namespaced names. `McpServers.connect` is the entry point; `loopd.app` calls it when
a native session opens.
"""

from loopd.mcp.client import McpClient, McpTimeouts
from loopd.mcp.rpc import McpClosed, McpError, McpExpired, McpTimeout
from loopd.mcp.servers import McpServers
from loopd.mcp.tools import McpTool, tool_name

__all__ = [
    "McpClient",
    "McpClosed",
    "McpError",
    "McpExpired",
    "McpServers",
    "McpTimeout",
    "McpTimeouts",
    "McpTool",
    "tool_name",
]
