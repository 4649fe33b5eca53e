"""The agent's view of files through one LSP connection: open buffers first.

The editor keeps the documents it opened in sync with us (full or incremental
`didChange`), so reading a file that is open gives the buffer as the person sees it,
saved or not. Writing a file that is open goes to the editor as a versioned,
labelled `workspace/applyEdit` (the buffer changes, the person's undo works, nothing
is written under the editor's feet); files that are not open go to disk. Either way
the changed file is revealed with `window/showDocument` when the client can.

The path is decided first, by the local gate (`GatedFiles.admit`): a secret is not
read from an open buffer either, and a protected or outside path needs its approval.
The open document is then found by the decided canonical path, never by resolving
the requested path again (a symlink swapped in meanwhile would select another open
document). Buffers live in loopd's memory, so a read is not exposed to a race, and an
edit to an open document goes to the buffer the editor already holds, not to a path
the editor would resolve. Over a `disk` that is not a gate, no buffer is used.
"""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass, field

from lsprotocol import types
from pygls.lsp.server import LanguageServer
from pygls.uris import from_fs_path, to_fs_path
from pygls.workspace import TextDocument

from loopd.tools.access import FileAccess, GatedFiles

log = logging.getLogger(__name__)


class EditRefused(OSError):
    """The editor did not apply an edit to an open document."""


# uri -> (document version when we edited it, the text we sent): the editor's
# didChange for our own edit may arrive after the agent reads the file again.
SentEdits = dict[str, tuple[int | None, str]]


@dataclass(frozen=True, slots=True)
class EditorFiles:
    """`FileAccess` over one connection's open documents, `disk` for the rest. Cheap
    to make (tools ask for one per call); what must outlive a call is in `sent`."""

    server: LanguageServer
    disk: FileAccess
    sent: SentEdits = field(default_factory=dict)
    reveal: bool = True

    async def read_text(self, path: str) -> str:
        doc = self._open_document(path, write=False)
        if doc is None:
            return await self.disk.read_text(path)
        sent = self.sent.pop(doc.uri, None)
        if sent is not None and sent[0] == doc.version:
            self.sent[doc.uri] = sent
            return sent[1]
        return doc.source

    async def write_text(self, path: str, text: str) -> None:
        doc = self._open_document(path, write=True)
        if doc is None:
            await self.disk.write_text(path, text)
            uri = from_fs_path(path)
            selection = None
        else:
            uri = doc.uri
            selection = await self._apply(doc, path, text)
        if self.reveal and uri and self._can_show_documents():
            await self._show(uri, selection)

    def _open_document(self, path: str, *, write: bool) -> TextDocument | None:
        """The open document for `path` once the gate admitted it; None for a path
        no document holds (the disk route then decides again)."""
        if not isinstance(self.disk, GatedFiles):
            return None
        target = self.disk.admit(path, write=write).path
        for uri, doc in self.server.workspace.text_documents.items():
            local = to_fs_path(uri)
            if local is not None and target in (os.path.normpath(local), os.path.realpath(local)):
                found: TextDocument = doc
                return found
        return None

    async def _apply(self, doc: TextDocument, path: str, text: str) -> types.Range:
        old = self._current_text(doc)
        edit_range, new_text = minimal_edit(doc, old, text)
        label = f"loopd: edit {os.path.basename(path)}"
        edit = types.TextEdit(range=edit_range, new_text=new_text)
        if self._can_version_edits():
            ident = types.OptionalVersionedTextDocumentIdentifier(uri=doc.uri, version=doc.version)
            workspace_edit = types.WorkspaceEdit(
                document_changes=[types.TextDocumentEdit(text_document=ident, edits=[edit])]
            )
        else:
            workspace_edit = types.WorkspaceEdit(changes={doc.uri: [edit]})
        result = await self.server.workspace_apply_edit_async(
            types.ApplyWorkspaceEditParams(edit=workspace_edit, label=label)
        )
        if not result.applied:
            reason = result.failure_reason or "no reason given"
            raise EditRefused(f"the editor did not apply the edit to {path}: {reason}")
        self.sent[doc.uri] = (doc.version, text)
        return edit_range

    def _current_text(self, doc: TextDocument) -> str:
        sent = self.sent.get(doc.uri)
        return sent[1] if sent is not None and sent[0] == doc.version else doc.source

    async def _show(self, uri: str, selection: types.Range | None) -> None:
        params = types.ShowDocumentParams(uri=uri, take_focus=False, selection=selection)
        try:
            await self.server.window_show_document_async(params)
        except Exception:
            log.warning("the editor could not show %s", uri, exc_info=True)

    def _can_version_edits(self) -> bool:
        ws = self.server.client_capabilities.workspace
        return bool(ws and ws.workspace_edit and ws.workspace_edit.document_changes)

    def _can_show_documents(self) -> bool:
        window = self.server.client_capabilities.window
        return bool(window and window.show_document and window.show_document.support)


def minimal_edit(doc: TextDocument, old: str, new: str) -> tuple[types.Range, str]:
    """The smallest single replacement turning `old` (the text of `doc`) into `new`,
    with positions in the client's units."""
    limit = min(len(old), len(new))
    start = 0
    while start < limit and old[start] == new[start]:
        start += 1
    tail = 0
    while tail < limit - start and old[-1 - tail] == new[-1 - tail]:
        tail += 1
    span = types.Range(start=_position(doc, old, start), end=_position(doc, old, len(old) - tail))
    return span, new[start : len(new) - tail]


def _position(doc: TextDocument, text: str, offset: int) -> types.Position:
    lines = text.splitlines(keepends=True)
    consumed = 0
    for number, line in enumerate(lines):
        if offset < consumed + len(line) or (number == len(lines) - 1 and not line.endswith("\n")):
            column = doc.position_codec.client_num_units(line[: offset - consumed])
            return types.Position(line=number, character=column)
        consumed += len(line)
    return types.Position(line=len(lines), character=0)
