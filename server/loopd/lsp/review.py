"""Review of the agent's edits in the editor, hunk by hunk: `loopd/review/*`.

A client opts in with `review` in its `loopd` options (`true`, or `{"alwaysAsk":
[globs]}`). Then every write of the file tools becomes, before it lands:

1. the gate decides the path (`GatedFiles.admit`): a refused path is refused here,
   never shown for review; the proposal names the canonical path. A file the
   agent may write but not read (a secret) is proposed whole, its old text unsent
   (`oldUnread`), and always asks;
2. `loopd/review/propose` (server -> client request) with the old and proposed text
   and their hunks (`loopd.lsp.hunks`); the client shows them as pending changes
   and answers which hunks the person accepted;
3. exactly the accepted hunks are written, through the connection's own file
   route (the open buffer by `workspace/applyEdit`, else the disk beneath its
   root), unless the file changed during the review (then nothing is: the reviewed
   text would overwrite that change); `loopd/review/settled` tells the client (it
   saves an open document: accepting is saving);
4. the tool's result says which hunks were rejected (`Reviewed.note`).

The write waits for the review, on purpose: the tool's result is then the truth
about the file (the model's next request says what was rejected, in the same
turn), the freshness log records the text that landed, so the model's next edit is
computed from the file as it is, and undo and checkpoints see what is on disk. A
write that returned at once would leave the model editing a file whose content is
still being decided. The cost, a turn that waits for the person, is bounded by the
client's auto-accept timer and by `REVIEW_TIMEOUT`.

Fail-closed: an answer that is missing, late, malformed or names unknown hunks
rejects what it does not accept; a client that opted in but cannot review (method
not found) gets no write. A path under the `alwaysAsk` globs (matched on the
canonical path, so a symlink or `a/../.env` does not dodge them) is flagged in the
proposal, and an answer for it not given `"by": "person"` (an auto-accept timer's)
accepts nothing.
"""

from __future__ import annotations

import asyncio
import logging
import os
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from pygls.exceptions import JsonRpcMethodNotFound
from pygls.uris import from_fs_path

from loopd.lsp.hunks import Proposal
from loopd.policy.globs import path_glob
from loopd.tools.access import FileAccess, GatedFiles, PathRefused, Reviewed
from loopd.tools.env import RUNNING_CALL

log = logging.getLogger(__name__)

PROPOSE_METHOD = "loopd/review/propose"
SETTLED_METHOD = "loopd/review/settled"
REVIEW_TIMEOUT = 600.0  # seconds without an answer: nothing is accepted
ALWAYS_ASK = (".env*", ".vscode/**", ".git/**", ".loopd/**")


@dataclass(frozen=True, slots=True)
class ReviewOptions:
    """A client's review opt-in: the globs whose paths a timer never accepts, the
    client's added to `ALWAYS_ASK` (a client can ask more, never less). A glob with
    no `/` matches a file name at any depth, others the path from the root."""

    always_ask: tuple[str, ...] = ALWAYS_ASK

    @classmethod
    def from_wire(cls, spec: Any) -> ReviewOptions | None:
        """`true` or `{"alwaysAsk": [...]}`; anything else is no review."""
        if spec is True:
            return cls()
        if not isinstance(spec, Mapping):
            return None
        globs = spec.get("alwaysAsk")
        if not isinstance(globs, list):
            return cls()
        added = (g for g in globs if isinstance(g, str) and g.strip() and g not in ALWAYS_ASK)
        return cls((*ALWAYS_ASK, *added))

    def always_asks(self, path: str, roots: Sequence[str]) -> bool:
        """Whether canonical `path` is one a timer may not accept: under a glob, or
        outside every root. Case is folded, so more paths ask, never fewer."""
        relative = _relative(path, roots)
        if relative is None:
            return True
        name = relative.rsplit("/", 1)[-1]
        for glob in self.always_ask:
            pattern = glob.strip().lstrip("/")
            subject = relative if "/" in pattern else name
            if path_glob(pattern, True).match(subject):
                return True
        return False


class Asks(Protocol):
    """The connection's side of a review: a withdrawable request, a notification."""

    async def request(self, method: str, params: Any) -> Any: ...

    def notify(self, method: str, params: Any) -> None: ...


@dataclass(frozen=True, slots=True)
class ReviewFiles:
    """`FileAccess` whose writes the person reviews first (see the module doc);
    reads go to `inner` unchanged."""

    inner: FileAccess
    local: FileAccess
    client: Asks
    session_id: str
    roots: tuple[str, ...]
    options: ReviewOptions
    timeout: float = REVIEW_TIMEOUT

    async def read_text(self, path: str) -> str:
        return await self.inner.read_text(path)

    async def write_text(self, path: str, text: str) -> Reviewed | None:
        canonical = self._canonical(path)
        unread = False
        try:
            old: str | None = await self.inner.read_text(path)
        except FileNotFoundError:
            old = None
        except PermissionError:  # a secret is written, never read: reviewed whole
            old, unread = None, True
        proposal = Proposal.of(old, text)
        if not proposal.hunks:
            if unread:
                raise PathRefused(path, "emptying a file loopd may not read is not reviewable")
            return None if old is not None else await self.inner.write_text(path, text)
        always = unread or self.options.always_asks(canonical, self.roots)
        review_id = f"rev_{uuid.uuid4().hex[:10]}"
        params = {**self._params(review_id, canonical, proposal, always), "oldUnread": unread}
        accepted = await self._accepted(path, params, proposal, always)
        note = proposal.note(accepted, self._shown(canonical))
        if accepted and not unread and await self._moved(path, old):
            accepted, note = frozenset(), self._moved_note(canonical)
        if not accepted:
            self._settled(review_id, canonical, written=False)
            return Reviewed(None, note)
        written = proposal.apply(accepted)
        await self.inner.write_text(path, written)
        self._settled(review_id, canonical, written=True)
        return Reviewed(written, note) if note else None

    def _canonical(self, path: str) -> str:
        """The decided path (a refusal raises here, before anyone is asked)."""
        if isinstance(self.local, GatedFiles):
            return self.local.admit(path, write=True).path
        return os.path.realpath(path)

    def _params(
        self, review_id: str, path: str, proposal: Proposal, always: bool
    ) -> dict[str, Any]:
        return {
            "reviewId": review_id,
            "sessionId": self.session_id,
            "toolCallId": RUNNING_CALL.get(),
            "path": path,
            "uri": from_fs_path(path),
            "relativePath": self._shown(path),
            "oldText": proposal.old,
            "newText": proposal.new,
            "hunks": [h.to_wire() for h in proposal.hunks],
            "alwaysAsk": always,
        }

    async def _accepted(
        self, path: str, params: dict[str, Any], proposal: Proposal, always: bool
    ) -> frozenset[int]:
        try:
            reply = await asyncio.wait_for(
                self.client.request(PROPOSE_METHOD, params), self.timeout
            )
        except JsonRpcMethodNotFound:
            raise PathRefused(path, "the editor cannot review edits; nothing was written") from None
        except TimeoutError:
            log.info("no review of %s in %ss: nothing accepted", path, self.timeout)
            return frozenset()
        accepted = accepted_of(reply, len(proposal.hunks))
        if always and not (isinstance(reply, Mapping) and reply.get("by") == "person"):
            return frozenset()  # only a person accepts an alwaysAsk path
        return accepted

    async def _moved(self, path: str, old: str | None) -> bool:
        """Whether the file is no longer the `old` the hunks were cut from (the
        person typed in it, a command rewrote it): then nothing is written, since
        the reviewed text would overwrite that change."""
        try:
            return await self.inner.read_text(path) != old
        except FileNotFoundError:
            return old is not None

    def _moved_note(self, path: str) -> str:
        return (
            f"{self._shown(path)} changed while this edit was being reviewed, so nothing "
            "was written; read it again before changing it."
        )

    def _settled(self, review_id: str, path: str, *, written: bool) -> None:
        params = {"reviewId": review_id, "sessionId": self.session_id, "path": path}
        params["uri"] = from_fs_path(path) or ""
        self.client.notify(SETTLED_METHOD, {**params, "written": written})

    def _shown(self, path: str) -> str:
        return _relative(path, self.roots) or path


def accepted_of(reply: Any, count: int) -> frozenset[int]:
    """The hunks a `loopd/review/propose` answer accepts: `{"hunks": [{"index": n,
    "decision": "accept" | "reject"}], "by": "person" | "timer"}`. Whatever is not
    plainly accepted (a missing entry, an unknown decision, a bad index) is not."""
    entries = reply.get("hunks") if isinstance(reply, Mapping) else None
    if not isinstance(entries, list):
        return frozenset()
    accepted: set[int] = set()
    for entry in entries:
        if not isinstance(entry, Mapping):
            continue
        index = entry.get("index")
        if not isinstance(index, int) or isinstance(index, bool) or not 0 <= index < count:
            continue
        if entry.get("decision") == "accept":
            accepted.add(index)
    return frozenset(accepted)


def _relative(path: str, roots: Sequence[str]) -> str | None:
    """`path` relative to the first root holding it, with `/`; None when outside."""
    for root in roots:
        real = os.path.realpath(root)
        if path == real or path.startswith(real.rstrip(os.sep) + os.sep):
            return os.path.relpath(path, real).replace(os.sep, "/")
    return None
