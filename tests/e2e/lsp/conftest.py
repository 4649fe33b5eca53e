"""Spawn the test launcher (`loopd lsp` on a scripted model) and drive it with
pytest-lsp's client, in one of two profiles:

- `extension`: Neovim 0.11's capabilities plus `experimental.loopd`: gets
  `loopd/session/update` and answers `loopd/session/requestPermission`;
- `plain`: VS Code's capabilities, nothing more: relies on `window/showMessageRequest`,
  `$/progress` and `window/logMessage`.

`Editor` plays the editor's part for `workspace/applyEdit`: it applies the edit to its
own copy of the buffer and reports it back with `didChange`, as a real editor does.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from lsprotocol import types
from pytest_lsp import ClientServerConfig, LanguageClient, client_capabilities
from pytest_lsp.client import register_lsp_features

from loopd.lsp.wire import raw_converter

ROOT = Path(__file__).resolve().parents[3]
LAUNCHER = ROOT / "tests" / "e2e" / "launcher.py"

pytestmark = pytest.mark.e2e


async def until(predicate: Callable[[], Any], within: float = 10.0) -> None:
    """Wait until `predicate()` holds. It polls every few ms: what it waits for happens
    in another process, so there is no event to wait on."""
    async with asyncio.timeout(within):
        while not predicate():  # noqa: ASYNC110
            await asyncio.sleep(0.005)


def launcher_env(home: Path, script: dict[str, Any]) -> dict[str, str]:
    script_path = home / "script.json"
    script_path.write_text(json.dumps(script))
    return {
        **os.environ,
        "LOOPD_TEST_HOME": str(home),
        "LOOPD_TEST_SCRIPT": str(script_path),
        "PYTHONPATH": str(ROOT / "server"),
    }


@dataclass
class Editor:
    """What one test client saw and how it answers."""

    client: LanguageClient
    home: Path
    updates: list[dict[str, Any]] = field(default_factory=list)
    permission_requests: list[dict[str, Any]] = field(default_factory=list)
    user_questions: list[dict[str, Any]] = field(default_factory=list)
    dialogs: list[types.ShowMessageRequestParams] = field(default_factory=list)
    answers: list[str] = field(default_factory=list)  # option ids / titles, in order
    withdrawn: list[str] = field(default_factory=list)
    edits: list[types.ApplyWorkspaceEditParams] = field(default_factory=list)
    buffers: dict[str, tuple[int, str]] = field(default_factory=dict)
    server: types.InitializeResult | None = None

    # -- documents ------------------------------------------------------------------

    def open(self, path: Path, text: str) -> str:
        uri = path.as_uri()
        self.buffers[uri] = (1, text)
        item = types.TextDocumentItem(uri=uri, language_id="python", version=1, text=text)
        self.client.text_document_did_open(types.DidOpenTextDocumentParams(text_document=item))
        return uri

    def change(self, uri: str, edit: types.TextEdit | None, text: str) -> None:
        """Change the buffer (unsaved): incrementally with `edit`, else in full."""
        version = self.buffers[uri][0] + 1
        self.buffers[uri] = (version, text)
        change: Any
        if edit is None:
            change = types.TextDocumentContentChangeWholeDocument(text=text)
        else:
            change = types.TextDocumentContentChangePartial(range=edit.range, text=edit.new_text)
        ident = types.VersionedTextDocumentIdentifier(uri=uri, version=version)
        self.client.text_document_did_change(
            types.DidChangeTextDocumentParams(text_document=ident, content_changes=[change])
        )

    def apply(self, params: types.ApplyWorkspaceEditParams) -> types.ApplyWorkspaceEditResult:
        self.edits.append(params)
        for change in params.edit.document_changes or []:
            uri = change.text_document.uri
            version, text = self.buffers[uri]
            if change.text_document.version != version:
                return types.ApplyWorkspaceEditResult(applied=False, failure_reason="stale")
            for edit in change.edits:
                text = _replace(text, edit)
                self.change(uri, edit, text)
        for uri, edits in (params.edit.changes or {}).items():  # unversioned
            text = self.buffers[uri][1]
            for edit in edits:
                text = _replace(text, edit)
                self.change(uri, edit, text)
        return types.ApplyWorkspaceEditResult(applied=True)

    # -- the extension --------------------------------------------------------------

    def texts(self, kind: str = "agent_message_chunk") -> str:
        return "".join(
            u["update"]["content"].get("text", "")
            for u in self.updates
            if u["update"]["sessionUpdate"] == kind
        )

    def kinds(self) -> list[str]:
        return [u["update"]["sessionUpdate"] for u in self.updates]

    async def request(self, method: str, params: Any) -> Any:
        return await self.client.protocol.send_request_async(method, params)

    async def new_session(self) -> str:
        result = await self.request("loopd/session/new", {"cwd": str(self.home), "mcpServers": []})
        return str(result["sessionId"])

    async def command(self, name: str, *arguments: Any) -> Any:
        params = types.ExecuteCommandParams(command=name, arguments=list(arguments))
        return await self.client.workspace_execute_command_async(params)

    def executed(self) -> list[str]:
        log = self.home / "executed.log"
        return log.read_text().splitlines() if log.exists() else []

    def progress_ends(self) -> list[str | None]:
        return [
            p.message
            for reports in self.client.progress_reports.values()
            for p in reports
            if isinstance(p, types.WorkDoneProgressEnd)
        ]


def _replace(text: str, edit: types.TextEdit) -> str:
    lines = text.splitlines(keepends=True)

    def offset(pos: types.Position) -> int:
        return sum(len(line) for line in lines[: pos.line]) + pos.character

    return text[: offset(edit.range.start)] + edit.new_text + text[offset(edit.range.end) :]


def _wire(editor: Editor, profile: str, answer_dialogs: bool) -> None:
    client = editor.client

    @client.feature("loopd/session/update")
    def on_update(params: dict[str, Any]) -> None:
        editor.updates.append(params)

    @client.feature("loopd/session/requestPermission")
    async def on_permission(params: dict[str, Any]) -> dict[str, Any]:
        editor.permission_requests.append(params)
        try:
            await until(lambda: editor.answers, within=60)
        except asyncio.CancelledError:
            editor.withdrawn.append(params["toolCall"]["toolCallId"])
            raise
        return {"outcome": {"outcome": "selected", "optionId": editor.answers.pop(0)}}

    @client.feature("loopd/session/askUser")
    async def on_question(params: dict[str, Any]) -> dict[str, Any]:
        editor.user_questions.append(params)
        await until(lambda: editor.answers, within=60)
        return {"answer": editor.answers.pop(0)}

    if answer_dialogs:

        @client.feature(types.WINDOW_SHOW_MESSAGE_REQUEST)
        async def on_dialog(params: types.ShowMessageRequestParams) -> Any:
            editor.dialogs.append(params)
            await until(lambda: editor.answers, within=60)
            return types.MessageActionItem(title=editor.answers.pop(0))

    @client.feature(types.WORKSPACE_APPLY_EDIT)
    def on_apply(params: types.ApplyWorkspaceEditParams) -> types.ApplyWorkspaceEditResult:
        return editor.apply(params)


def _client_factory() -> LanguageClient:
    client = LanguageClient(converter_factory=raw_converter)
    register_lsp_features(client)
    return client


Start = Callable[..., Awaitable[Editor]]


@pytest.fixture
async def start(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[Start]:
    """`await start(script, profile="extension"|"plain", answer_dialogs=True)`; with
    `server=(argv, env)` that server instead of the launcher (`script` unused), with
    `loopd=` the extension profile's `experimental.loopd` opt-in (default `true`). The
    server starts in the workspace folder, as an editor starts it (not in this
    checkout, whose `node_modules` CLIs it would then rightly never run)."""
    editors: list[Editor] = []
    monkeypatch.chdir(tmp_path)

    async def _start(
        script: dict[str, Any],
        profile: str = "extension",
        answer_dialogs: bool = True,
        server: tuple[list[str], dict[str, str]] | None = None,
        loopd: Any = True,
    ) -> Editor:
        argv, env = server or ([sys.executable, str(LAUNCHER)], launcher_env(tmp_path, script))
        config = ClientServerConfig(
            server_command=argv, client_factory=_client_factory, server_env=env
        )
        client = await config.start()
        editor = Editor(client, tmp_path)
        _wire(editor, profile, answer_dialogs)
        if profile == "extension":
            caps = client_capabilities("neovim@v0.11")
            caps.experimental = {"loopd": loopd}
        else:
            caps = client_capabilities("visual-studio-code")
        editor.server = await client.initialize_session(
            types.InitializeParams(capabilities=caps, root_uri=tmp_path.as_uri())
        )
        editors.append(editor)
        return editor

    yield _start
    for editor in editors:
        await editor.client.shutdown_session()
        await editor.client.stop()
