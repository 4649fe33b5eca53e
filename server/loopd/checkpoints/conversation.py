"""A session's model context, kept in a checkpoint: every message (one blob each, so
the turns a session shares with its earlier checkpoints are kept once), the
compacted view (where it starts, the summary before it) and the instruction files as
the model was last told them (what changed in them since is told again). Restoring
it makes the store's model context exactly what it was then; the journal of what was
shown is not touched (the restore is journaled there as a note)."""

from __future__ import annotations

import json
from dataclasses import dataclass

from loopd.checkpoints.blobs import BlobStore
from loopd.protocol.jsonvalues import dumps_safe
from loopd.protocol.messages import message_from_json, message_to_json
from loopd.store.sqlite import ContextRecord, SqliteStore


@dataclass(frozen=True, slots=True)
class Mark:
    """The model context as it stands: where its messages end, and its compacted view.
    Taken before a turn may add to it, kept later (in a thread) as it was then."""

    upto: int
    context: ContextRecord


def mark(store: SqliteStore, session_id: str) -> Mark:
    return Mark(store.last_message(session_id), store.context(session_id))


def keep(
    store: SqliteStore, blobs: BlobStore, session_id: str, at: Mark | None = None
) -> tuple[str, int]:
    """The conversation's digest as it is at `at` (None: now), and the bytes keeping
    it added. Messages are only ever appended during a turn (a restore or `/clear`
    runs between turns), so what `at` marked is still there."""
    at = at or mark(store, session_id)
    added = 0
    digests = []
    for message in store.messages(session_id, at.upto):
        body = dumps_safe(message_to_json(message), separators=(",", ":")).encode()
        digest, n = blobs.put(body)
        digests.append(digest)
        added += n
    context = at.context
    whole = {
        "messages": digests,
        "start": context.start,
        "summary": context.summary,
        "instructions": dict(context.instructions),
    }
    digest, n = blobs.put(json.dumps(whole, separators=(",", ":")).encode())
    return digest, added + n


def put_back(store: SqliteStore, blobs: BlobStore, session_id: str, digest: str) -> int:
    """Make the session's model context the one kept as `digest`; how many messages
    it holds. Raises `ValueError`/`OSError` (and changes nothing) when a blob of it
    cannot be read."""
    whole = json.loads(blobs.get(digest))
    messages = [message_from_json(json.loads(blobs.get(d))) for d in whole["messages"]]
    store.clear_messages(session_id)
    for message in messages:
        store.append_message(session_id, message)
    store.save_context(
        session_id,
        start=int(whole["start"]),
        summary=str(whole["summary"]),
        instructions={str(k): str(v) for k, v in dict(whole.get("instructions", {})).items()},
    )
    return len(messages)
