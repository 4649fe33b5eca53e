"""loopd.tools: the native engine's tools, behind the engine's `ToolBox` port.

`ToolRegistry(env)` is the `ToolBox`; `ToolEnv` is one session's roots, file access,
sandbox, background processes and plan.
"""

from loopd.tools.access import FileAccess, LocalFiles
from loopd.tools.env import ToolEnv, ToolLimits
from loopd.tools.registry import ToolRegistry, builtin_tools

__all__ = ["FileAccess", "LocalFiles", "ToolEnv", "ToolLimits", "ToolRegistry", "builtin_tools"]
