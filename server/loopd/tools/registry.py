"""`ToolRegistry`: the engine's `ToolBox` over a set of tools and one session's env.

The registry owns the two rules every tool would otherwise repeat: arguments are
checked against the tool's schema before the tool sees them (so a bad call fails
with a message the model can act on, before anything is shown to the person), and
`run` never raises anything but `CancelledError`: a tool failure is a result the
model reads and recovers from, not an exception that ends the turn. `run` also makes
the call's policy grant current while the tool runs (`loopd.policy.grants`).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

from loopd.engine.ports import Declaration, ToolCall, ToolProgress, ToolResult
from loopd.policy.beneath import PathEscapeError
from loopd.policy.paths import Unresolvable
from loopd.protocol.errors import ToolInputError, ToolUnusable
from loopd.protocol.model import INVALID_JSON_KEY, ToolSpec
from loopd.tools.access import FileTooLarge, NotText, PathRefused
from loopd.tools.ask_user import AskUser
from loopd.tools.base import Conditional, Prechecked, Tool, failure
from loopd.tools.bash import Bash
from loopd.tools.edit import Edit, Write
from loopd.tools.env import RUNNING_CALL, ToolEnv
from loopd.tools.glob import Glob
from loopd.tools.grep import Grep
from loopd.tools.plan import Plan
from loopd.tools.read import Read
from loopd.tools.schema import validate

log = logging.getLogger(__name__)


def builtin_tools() -> tuple[Tool, ...]:
    """The core tools, in the order they are offered to the model."""
    return (Read(), Write(), Edit(), Bash(), Glob(), Grep("rg"), Plan(), AskUser())


class ToolRegistry:
    def __init__(self, env: ToolEnv, tools: Sequence[Tool] | None = None) -> None:
        self.env = env
        chosen = builtin_tools() if tools is None else tuple(tools)
        self._tools = {t.name: t for t in chosen}
        if len(self._tools) != len(chosen):
            raise ValueError("two tools share a name")
        self._swaps: list[tuple[Sequence[Tool], Sequence[Tool]]] = []

    def swap(self, gone: Sequence[Tool], added: Sequence[Tool]) -> None:
        """Tools that change while the session lives (an MCP server's list): `gone`
        are no longer offered or run, `added` are offered, from the next turn on
        (`at_turn_start`). A turn keeps the tools it started with, as it keeps its
        model (seed 001: live changes at turn boundaries): a tool vanishing between
        two steps would leave the model's plan of calls pointing at nothing. A
        name already taken stays with its tool; the caller keeps names apart."""
        self._swaps.append((gone, added))

    def at_turn_start(self) -> None:
        """A turn begins: the tool changes heard since the last one apply."""
        swaps, self._swaps = self._swaps, []
        for gone, added in swaps:
            for tool in gone:
                if self._tools.get(tool.name) is tool:
                    del self._tools[tool.name]
            for tool in added:
                if self._tools.setdefault(tool.name, tool) is not tool:
                    log.warning("tool %s is taken; the new one is not offered", tool.name)

    def specs(self) -> Sequence[ToolSpec]:
        return [
            ToolSpec(t.name, t.description, t.input_schema)
            for t in self._tools.values()
            if self._offered(t)
        ]

    def _offered(self, tool: Tool) -> bool:
        """A tool that is only sometimes usable (`ask_user` needs someone to ask)
        says so with `offered(env)`; one that is not offered does not exist."""
        return not isinstance(tool, Conditional) or tool.offered(self.env)

    async def declare(self, call: ToolCall) -> Declaration:
        """What `call` would touch. `ToolInputError` for arguments it cannot use;
        `ToolUnusable` for anything else that fails on the way (the path is a FIFO,
        or was swapped while it was looked at): every tool error is a result."""
        tool = self._checked(call)
        try:
            return await tool.declare(call.input, self.env)
        except ToolInputError:
            raise
        except Exception as e:
            raise ToolUnusable(_explained(call.name, e)) from e

    async def refusal(self, call: ToolCall) -> str | None:
        """Why `call` would be refused now (`Prechecked` tools), before anyone is
        asked; None when nothing known refuses it, or when only the approved run may
        look (a path opened only under the call's grant): the run checks again."""
        tool = self._tools.get(call.name)
        if not isinstance(tool, Prechecked):
            return None
        try:
            return await tool.refusal(call.input, self.env)
        except PermissionError:
            return None
        except Exception as e:
            return _explained(call.name, e)

    async def run(self, call: ToolCall, progress: ToolProgress) -> ToolResult:
        token = RUNNING_CALL.set(call.id)
        try:
            with self.env.grants.running(call.id):
                return await self._run(call, progress)
        finally:
            RUNNING_CALL.reset(token)

    async def _run(self, call: ToolCall, progress: ToolProgress) -> ToolResult:
        try:
            return await self._checked(call).run(call.input, self.env, progress)
        except Exception as e:
            return failure(_explained(call.name, e))

    def _checked(self, call: ToolCall) -> Tool:
        tool = self._tools.get(call.name)
        if tool is None or not self._offered(tool):
            names = ", ".join(t.name for t in self._tools.values() if self._offered(t))
            raise ToolInputError(f"there is no tool named {call.name!r}; the tools are: {names}")
        if INVALID_JSON_KEY in call.input:
            raise ToolInputError(
                "the arguments were not valid JSON (possibly cut off by the output limit); "
                "send the call again with complete arguments"
            )
        validate(call.input, tool.input_schema)
        return tool


def _explained(tool: str, e: Exception) -> str:
    """What the model reads when `tool` failed with `e`."""
    match e:
        case ToolInputError():
            return str(e)
        case FileNotFoundError():
            return f"No such file or directory: {e.filename or e}"
        case FileTooLarge():
            return f"{e}; use offset and limit, or grep, to look at part of it"
        case PathRefused():
            return f"Refused: {e.reason}. Nothing was read or written."
        case PathEscapeError():
            return (
                f"Refused: {e.path} changed into a path that leaves the approved folder (a "
                "symlink or `..`) after it was checked. Nothing was read or written."
            )
        case Unresolvable():
            return f"Refused: {e.strerror}. Nothing was read or written."
        case NotText():
            return f"{e} is a binary or non-UTF-8 file; it cannot be handled as text"
        case OSError():
            return f"{e.strerror or e}: {e.filename or ''}".rstrip(": ")
        case _:
            log.exception("tool %s failed", tool)
            return f"The {tool} tool failed unexpectedly: {type(e).__name__}: {e}"
