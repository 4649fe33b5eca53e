"""Test-only `loopd lsp`: the real LSP server on a real SessionManager and SqliteStore,
with a scripted model and three small tools that go through the session's file view
(the editor's buffers over the real path gate and beneath-opens).

Run as a script (the e2e tests spawn it like an editor spawns `loopd lsp`):

    LOOPD_TEST_HOME=DIR LOOPD_TEST_SCRIPT=script.json python tests/e2e/launcher.py [--tcp H:P]

The script is JSON: `{"replies": [{"text", "thinking", "tools": [[id, name, input]],
"hold": bool}], "ask": ["write", "bash"], "approvalTimeout": seconds}`. A reply with
`hold` never finishes (a turn to cancel). `bash` runs nothing: it appends the command
to DIR/executed.log, which is how tests see whether something "executed".
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from loopd.engine.ports import Declaration, ToolCall, ToolProgress, ToolResult, Verdict
from loopd.lsp.server import serve
from loopd.policy.paths import PathPolicy
from loopd.protocol.errors import ToolInputError
from loopd.protocol.events import DiffContent, TextBlock
from loopd.protocol.model import ToolSpec
from loopd.runtimes.base import RuntimeContext
from loopd.sessions.manager import SessionManager
from loopd.testing.fakes import Reply, ScriptedPolicy, ScriptedProvider
from loopd.testing.harness import scripted_manager
from loopd.tools.access import FileAccess, RoutedFiles
from loopd.tools.files import BeneathFiles


@dataclass(frozen=True, slots=True)
class FileTools:
    """read / write / bash over a session's file view."""

    files: FileAccess
    executed: Path

    def specs(self) -> Sequence[ToolSpec]:
        return [ToolSpec(n, n, {"type": "object"}) for n in ("read", "write", "bash")]

    async def aclose(self) -> None:
        return None

    async def declare(self, call: ToolCall) -> Declaration:
        match call.name:
            case "read":
                return Declaration(
                    f"Read {call.input['path']}", "read", reads=(call.input["path"],)
                )
            case "write":
                path = call.input["path"]
                diff = DiffContent(path, await self._old(path), call.input["text"])
                return Declaration(f"Write {path}", "edit", writes=(path,), preview=(diff,))
            case "bash":
                command = call.input["command"]
                return Declaration(f"Run `{command}`", "execute", command=command)
        raise ToolInputError(f"unknown tool {call.name!r}")

    async def _old(self, path: str) -> str | None:
        try:
            return await self.files.read_text(path)
        except (FileNotFoundError, PermissionError):  # as the real tools: no old text
            return None

    async def refusal(self, call: ToolCall) -> str | None:
        return None

    async def run(self, call: ToolCall, progress: ToolProgress) -> ToolResult:
        try:
            return await self._run(call)
        except PermissionError as refused:  # as the real registry: a result, said
            return ToolResult(f"Refused: {refused.strerror}", is_error=True)

    async def _run(self, call: ToolCall) -> ToolResult:
        match call.name:
            case "read":
                text = await self.files.read_text(call.input["path"])
                return ToolResult(text, content=(TextBlock(text),))
            case "write":
                path, text = call.input["path"], call.input["text"]
                diff = DiffContent(path, await self._old(path), text)
                await self.files.write_text(path, text)
                return ToolResult("written", content=(diff,))
            case _:
                with self.executed.open("a") as log:
                    log.write(call.input["command"] + "\n")
                return ToolResult("ran")


def build(home: Path, script: dict) -> SessionManager:
    replies = [
        Reply(
            text=r.get("text", ""),
            thinking=r.get("thinking", ""),
            tools=[tuple(t) for t in r.get("tools", [])],
            hold=asyncio.Event() if r.get("hold") else None,
        )
        for r in script.get("replies", [])
    ]
    policy = ScriptedPolicy({name: Verdict.ASK for name in script.get("ask", [])})

    def tools_for(ctx: RuntimeContext) -> FileTools:
        roots = tuple(os.path.realpath(r) for r in ctx.roots)
        local = BeneathFiles(PathPolicy(roots, os.path.realpath(home)))
        return FileTools(RoutedFiles(ctx.editor_files, local), home / "executed.log")

    manager = scripted_manager(
        home, ScriptedProvider.of(*replies), policy=policy, tools_for=tools_for
    )
    manager.approval_timeout = float(script.get("approvalTimeout", 30))
    return manager


def main(argv: list[str]) -> None:
    logging.basicConfig(stream=sys.stderr, level=logging.WARNING)
    home = Path(os.environ["LOOPD_TEST_HOME"])
    script_path = os.environ.get("LOOPD_TEST_SCRIPT")
    script = json.loads(Path(script_path).read_text()) if script_path else {}
    tcp = None
    if len(argv) == 2 and argv[0] == "--tcp":
        host, port = argv[1].rsplit(":", 1)
        tcp = (host, int(port))

    async def go() -> None:
        manager = build(home, script)
        try:
            await serve(manager, tcp)
        finally:
            await manager.shutdown()

    asyncio.run(go())


if __name__ == "__main__":
    main(sys.argv[1:])
