"""The shape of one tool, and the few helpers tools share.

A tool is a small stateless object: a name, prose for the model, a JSON Schema for
its input, an ACP tool kind, and two coroutines. `declare` says what a call will
touch before anything runs (the scheduler orders by it, the policy decides on it,
the person is shown it); `run` does the work. Both receive arguments already
validated against the schema, and the session's `ToolEnv`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol, runtime_checkable

from loopd.engine.ports import Declaration, ToolProgress, ToolResult
from loopd.protocol.errors import ToolInputError
from loopd.protocol.events import ToolKind
from loopd.tools.env import ToolEnv

Args = Mapping[str, Any]


class Tool(Protocol):
    @property
    def name(self) -> str: ...

    @property
    def description(self) -> str: ...

    @property
    def input_schema(self) -> Mapping[str, Any]: ...

    @property
    def kind(self) -> ToolKind: ...

    async def declare(self, args: Args, env: ToolEnv) -> Declaration:
        """Raise `ToolInputError` for arguments the tool cannot use."""
        ...

    async def run(self, args: Args, env: ToolEnv, progress: ToolProgress) -> ToolResult:
        """Failures the model should read are returned with `is_error=True` or raised
        as `ToolInputError`/`OSError`; the registry turns those into results."""
        ...


@runtime_checkable
class Conditional(Protocol):
    """A tool offered only when `offered(env)` holds."""

    def offered(self, env: ToolEnv) -> bool: ...


@runtime_checkable
class Prechecked(Protocol):
    """A tool that can tell, before the person is asked, that a call would be refused
    (the port's `ToolBox.refusal`): `refusal(args, env)` is that reason or None. It
    changes nothing; a path it may not open before approval (`PermissionError`) is
    for the run to judge."""

    async def refusal(self, args: Args, env: ToolEnv) -> str | None: ...


def failure(message: str) -> ToolResult:
    return ToolResult(output=message, is_error=True)


async def read_existing(env: ToolEnv, path: str) -> str | None:
    """The current text of `path`, or None when it does not exist yet."""
    try:
        return await env.files.read_text(path)
    except FileNotFoundError:
        return None
    except IsADirectoryError:
        raise ToolInputError(f"{env.display(path)} is a directory, not a file") from None


def line_of(text: str, index: int) -> int:
    """The 1-based line number of character `index` in `text`."""
    return text.count("\n", 0, index) + 1


def count_lines(text: str) -> int:
    return len(text.splitlines())
