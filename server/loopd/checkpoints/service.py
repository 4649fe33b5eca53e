"""`Checkpoints`: recording a session's checkpoints and restoring one.

Before each prompt the session records a `prompt` checkpoint (each root's files and
the model context), after it an `after` one (as the turn left the files). A restore
first records a `redo` checkpoint of what it replaces, then puts the code back, the
conversation, or both, then records an `after` of what it left.

A file changed outside the agent since the checkpoint is never overwritten
silently: only changes that end in an `after` checkpoint were the agent's (see
`_outside`); a restore that would overwrite or remove another is refused with their
names (`Conflict`) unless forced.

The store is bounded: when it is full, the blobs of deleted sessions are freed
(`collect`); a checkpoint that would still take the blob folder past `max_bytes` is
skipped (and says so), a file over `max_file_bytes` is left out of it (and named).
Everything here blocks on the disk: callers run it in a thread.
"""

from __future__ import annotations

import itertools
import os
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal

from loopd.checkpoints import conversation, manifest
from loopd.checkpoints.blobs import BlobStore
from loopd.checkpoints.book import Checkpoint, CheckpointBook, Kind
from loopd.checkpoints.collect import collect
from loopd.checkpoints.manifest import Entry
from loopd.checkpoints.restore import Applied, apply, plan
from loopd.checkpoints.scan import Scan, StoreFull, TooManyFiles, seen_by
from loopd.protocol.errors import LoopdError
from loopd.protocol.reading import FileReader
from loopd.store.sqlite import SqliteStore

Scope = Literal["code", "conversation", "both"]
SCOPES: tuple[Scope, ...] = ("both", "code", "conversation")


@dataclass(frozen=True, slots=True)
class CheckpointLimits:
    max_bytes: int = 2 * 1024**3
    max_file_bytes: int = 4 * 1024**2


class Conflict(LoopdError):
    """Files changed outside the agent since the checkpoint: restoring would lose them."""

    def __init__(self, paths: Sequence[str]) -> None:
        self.paths = tuple(paths)
        super().__init__(f"{self.paths_said}\nrestore with force to overwrite them anyway")

    @property
    def paths_said(self) -> str:
        listed = "\n".join(f"  {p}" for p in self.paths)
        return (
            "these files changed outside the agent since that checkpoint, and restoring "
            f"would overwrite them:\n{listed}"
        )


@dataclass(frozen=True, slots=True)
class Recorded:
    point: Checkpoint | None  # None: skipped (`note` says why)
    note: str = ""


@dataclass(frozen=True, slots=True)
class Restored:
    point: Checkpoint
    scope: Scope
    written: tuple[str, ...] = ()
    removed: tuple[str, ...] = ()
    failed: tuple[tuple[str, str], ...] = ()
    messages: int | None = None  # the model context's length now, when it was restored

    @property
    def summary(self) -> str:
        where = f"before prompt {self.point.prompt}" if self.point.kind == "prompt" else "redo"
        lines = [f"Restored the {_scope_words(self.scope)} to {where}."]
        if self.scope != "conversation":
            lines.append(f"{len(self.written)} files written, {len(self.removed)} removed.")
        lines += [f"Not restored: {path}: {why}" for path, why in self.failed]
        return "\n".join(lines)


def _scope_words(scope: Scope) -> str:
    return {"both": "code and the conversation", "code": "code", "conversation": "conversation"}[
        scope
    ]


@dataclass(slots=True)
class Checkpoints:
    store: SqliteStore
    folder: str  # the blob folder, under the data dir
    reader: FileReader  # loopd's reader of workspaces (the ignore files), any roots
    home: str
    own: tuple[str, ...]  # loopd's own folders: never kept, never written
    limits: CheckpointLimits = field(default_factory=CheckpointLimits)
    book: CheckpointBook = field(init=False)
    blobs: BlobStore = field(init=False)
    _newest: dict[str, dict[str, Entry]] = field(init=False, default_factory=dict)
    _folders: dict[str, manifest.Folders] = field(init=False, default_factory=dict)
    _lock: threading.Lock = field(init=False, default_factory=threading.Lock)

    def __post_init__(self) -> None:
        self.book = CheckpointBook(self.store)
        self.blobs = BlobStore(self.folder)

    def of(self, session_id: str) -> list[Checkpoint]:
        return self.book.of(session_id)

    def record(
        self, session_id: str, kind: Kind, roots: Sequence[str], now: str,
        label: str = "", with_conversation: bool = True, at: conversation.Mark | None = None,
    ) -> Recorded:  # fmt: skip
        """Record a checkpoint of `roots` and, `with_conversation`, of the model
        context (as it was at `at`, None: now). Skipped, with a note, when the store
        has no room for it."""
        roots = [os.path.realpath(r) for r in roots]  # as loopd's own folders are named
        with self._lock:
            try:
                scans = self._scan_all(roots)
            except StoreFull:
                return Recorded(None, self._full_note())
            except TooManyFiles as many:
                return Recorded(None, f"Checkpoint skipped: {many}.")
            except OSError as err:
                return Recorded(None, f"Checkpoint skipped: a folder could not be read ({err}).")
            added = sum(s.added for s in scans)
            digests: dict[str, str] = {}
            for scan in scans:
                known = self._folders.setdefault(scan.root, {})
                digests[scan.root], n = manifest.save(self.blobs, scan.manifest, known)
                added += n
                self._newest[scan.root] = scan.manifest
            talk = None
            if with_conversation:
                talk, n = conversation.keep(self.store, self.blobs, session_id, at)
                added += n
            left_out = tuple(f"{s.root}/{p}" for s in scans for p in s.left_out)
            earlier = self.book.of(session_id)
            prompt = _prompt_number(earlier, kind)
            point = Checkpoint(0, kind, prompt, label, now, digests, talk, left_out)
            point = self.book.add(session_id, point, added)
        told = set(earlier[-1].left_out) if earlier else set()
        new = [p for p in left_out if p not in told]  # each said once, not at every turn
        return Recorded(point, "Left out of the checkpoint: " + "; ".join(new) if new else "")

    def _scan_all(self, roots: Sequence[str]) -> list[Scan]:
        """Scan every root; when the store fills up, free what deleted sessions left
        (`collect`) and scan again, once."""
        try:
            return self._scan_once(roots)
        except StoreFull:
            in_use = {d for m in self._newest.values() for d in _digests(m)}
            collect(self.book, self.blobs, in_use)
            return self._scan_once(roots)

    def _scan_once(self, roots: Sequence[str]) -> list[Scan]:
        room = self.limits.max_bytes - self.book.used()
        if room <= 0:
            raise StoreFull
        scans: list[Scan] = []
        try:
            for root in roots:
                scan = Scan(
                    root, self.reader.within((root,)), self.blobs, self._previous(root),
                    self.home, self.own, self.limits.max_file_bytes, room,
                )  # fmt: skip
                scans.append(scan)
                scan.run()
                room -= scan.added
        except BaseException:
            self.book.count(sum(s.added for s in scans))  # what was written stays counted
            raise
        return scans

    def _previous(self, root: str) -> Mapping[str, Entry]:
        if root in self._newest:
            return self._newest[root]
        digest = self.book.newest_manifest(root)
        try:
            return manifest.load(self.blobs, digest) if digest else {}
        except (OSError, ValueError):
            return {}

    def _full_note(self) -> str:
        used, limit = self.book.used(), self.limits.max_bytes
        return (
            f"Checkpoint skipped: the checkpoint store holds {used} bytes and may hold "
            f"{limit} ([checkpoints] max_bytes); this prompt cannot be restored."
        )

    def restore(
        self, session_id: str, target: Checkpoint, scope: Scope, now: str, force: bool = False
    ) -> Restored:
        """Put `target` back (see the module doc). Raises `Conflict`, or `LoopdError`
        when the redo point cannot be kept or the conversation was not kept."""
        if scope != "code" and target.conversation is None:
            raise LoopdError("this checkpoint has no conversation (the runtime keeps its own)")
        redo = self.record(session_id, "redo", list(target.roots), now)
        if redo.point is None:
            raise LoopdError(f"not restored: the current state could not be kept. {redo.note}")
        applied, messages = Applied(), None
        try:
            if scope != "conversation":
                applied = self._put_back_code(session_id, target, redo.point, force)
            if scope != "code" and target.conversation is not None:
                messages = self._put_back_talk(session_id, target.conversation)
        except BaseException:
            self.book.drop(session_id, redo.point.seq)
            raise
        self.record(session_id, "after", list(target.roots), now, with_conversation=False)
        return Restored(
            target, scope, tuple(applied.written), tuple(applied.removed),
            tuple(applied.failed), messages,
        )  # fmt: skip

    def _put_back_code(
        self, session_id: str, target: Checkpoint, now: Checkpoint, force: bool
    ) -> Applied:
        wanted = {r: manifest.load(self.blobs, d) for r, d in target.roots.items()}
        current = {r: manifest.load(self.blobs, d) for r, d in now.roots.items()}
        seen = {r: seen_by(r, self.reader.within((r,)), self.blobs, wanted[r]) for r in wanted}
        if not force:
            touched = {
                f"{r}/{p}" for r in wanted for p in _changing(wanted[r], current[r], seen[r])
            }
            outside = self._outside(session_id, target, now) & touched
            if outside:
                raise Conflict(sorted(outside))
        done = Applied()
        for root in wanted:
            one = apply(root, self.blobs, wanted[root], current[root], seen[root])
            done.written += [f"{root}/{p}" for p in one.written]
            done.removed += [f"{root}/{p}" for p in one.removed]
            done.failed += [(f"{root}/{p}", why) for p, why in one.failed]
        return done

    def _put_back_talk(self, session_id: str, digest: str) -> int:
        try:
            return conversation.put_back(self.store, self.blobs, session_id, digest)
        except (OSError, ValueError, KeyError) as err:
            raise LoopdError(f"the conversation of that checkpoint cannot be read: {err}") from err

    def _outside(self, session_id: str, target: Checkpoint, now: Checkpoint) -> set[str]:
        """Paths changed outside the agent after `target` (up to `now`, the redo point):
        what changed between two checkpoints is the agent's (or loopd's) only when the
        later one is the `after` of a turn or restore; anything else (between a turn
        and the next prompt, or where a turn's `after` is missing: it was killed, or
        its checkpoint skipped) counts as changed outside, so it is asked about."""
        points = [p for p in self.book.of(session_id) if target.seq <= p.seq <= now.seq]
        found: set[str] = set()
        for a, b in itertools.pairwise(points):
            if b.kind == "after":
                continue
            for root in a.roots.keys() & b.roots.keys():
                changed = manifest.changed_paths(self.blobs, a.roots[root], b.roots[root])
                found |= {f"{root}/{p}" for p in changed}
        return found


def _prompt_number(earlier: Sequence[Checkpoint], kind: Kind) -> int:
    prompts = [p.prompt for p in earlier if p.kind == "prompt"]
    return (max(prompts, default=0) + 1) if kind == "prompt" else max(prompts, default=0)


def _digests(kept: Mapping[str, Entry]) -> set[str]:
    return {e.digest for e in kept.values() if e.kept}


def _changing(
    target: Mapping[str, Entry], current: Mapping[str, Entry], seen: Callable[[str], bool]
) -> list[str]:
    write, remove = plan(target, current, seen)
    return [*write, *remove]


def blob_folder(data: str) -> str:
    return os.path.join(data, "checkpoints", "blobs")
