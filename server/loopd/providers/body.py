"""Request bodies assembled from cached JSON fragments.

Every request re-sends the whole conversation, and a long session's history runs to
thousands of messages. Translating each one to the wire format and JSON-encoding it
again on every request made a turn's CPU cost grow with the length of the history.
History messages are immutable, so a provider serialises each one once
(`FragmentCache`, keyed by identity) and later bodies splice the cached bytes in
(`encode_object` with `Raw` values); only what varies per request (Anthropic's
breakpoint on the latest user turn, the small scalar fields) is encoded fresh.

The bytes are what httpx's `json=` would have produced for the same values (compact
separators, UTF-8, no NaN), so the cache changes the cost, not the wire.
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from itertools import compress, count
from typing import Any, Generic, TypeVar

from loopd.protocol.jsonvalues import dumps_safe

T = TypeVar("T")
K = TypeVar("K")

KEEP_REQUESTS = 16
"""How many requests a fragment survives unused. One provider serves every session
of a runtime, so two conversations interleave their requests; dropping everything
not in the latest request would re-encode each one from scratch every time."""


def dumps(value: Any) -> bytes:
    """`value` as JSON bytes, encoded exactly as httpx encodes a `json=` body. A
    non-finite number that got into the history before the parse edge refused them
    is written as a string instead of failing every request (`dumps_safe`)."""
    return dumps_safe(value, ensure_ascii=False, separators=(",", ":")).encode()


def elements(values: Iterable[Any]) -> bytes:
    """A fragment: array elements, each preceded by a comma (so fragments concatenate
    without a scan for empties); empty when there are none, as one history message
    can be several wire messages or nothing at all."""
    return b"".join(b"," + dumps(v) for v in values)


@dataclass(frozen=True, slots=True)
class Raw:
    """JSON that is already serialised, as pieces that `encode_object` joins once
    (so a megabyte of history is copied once, not at every level of nesting)."""

    pieces: tuple[bytes, ...]


def join_array(fragments: Sequence[bytes]) -> Raw:
    """A JSON array of the elements in `fragments` (made by `elements`)."""
    first = next((i for i, f in enumerate(fragments) if f), None)
    if first is None:
        return Raw((b"[]",))
    return Raw((b"[", fragments[first][1:], *fragments[first + 1 :], b"]"))


def encode_object(fields: Mapping[str, Any]) -> bytes:
    """A JSON object with the keys of `fields` in order; `Raw` values go in as they
    are, anything else is encoded here."""
    pieces = [b"{"]
    for key, value in fields.items():
        if len(pieces) > 1:
            pieces.append(b",")
        pieces += (dumps(key), b":")
        if isinstance(value, Raw):
            pieces += value.pieces
        else:
            pieces.append(dumps(value))
    pieces.append(b"}")
    return b"".join(pieces)


def common_prefix(a: Sequence[object], b: Sequence[object]) -> int:
    """How many leading items `a` and `b` share, by identity (iterated in C)."""
    return next(compress(count(), map(operator.is_not, a, b)), min(len(a), len(b)))


@dataclass(frozen=True, slots=True, eq=False)  # compared by identity
class _Request(Generic[T]):
    items: Sequence[T]
    fragments: tuple[bytes, ...]
    number: int


class FragmentCache(Generic[T]):
    """The encoded fragment (see `elements`) of each item, rendered once per
    provider instance.

    Items are keyed by identity, which is sound only because they are immutable and
    the cache keeps each item referenced (so its id cannot be reused while cached).
    Equal items that are distinct objects (a history reloaded from the store) are
    simply rendered again. Every `keep` requests the cache drops the items that
    none of the last `keep` requests had, so messages compacted away or belonging to
    a closed session do not pin memory for long.

    The common request is an earlier one plus a few new messages (or, after a retry
    or a cancelled turn, an earlier one with a different tail), so the fragments of
    the newest recent request that shares a prefix with the new one (compared by
    identity, at C speed) are reused wholesale and only the rest is looked up: the
    per-request Python work is proportional to what is new, not to the whole
    history. A request that the new one wholly extends is forgotten, as the new one
    holds all its items."""

    def __init__(self, render: Callable[[T], bytes], *, keep: int = KEEP_REQUESTS) -> None:
        self._render = render
        self._keep = keep
        self._fragments: dict[int, bytes] = {}
        self._pinned: dict[int, T] = {}
        self._recent: list[_Request[T]] = []  # oldest first
        self._requests = 0

    def __len__(self) -> int:
        return len(self._fragments)

    def fragments(self, items: Sequence[T]) -> list[bytes]:
        """One fragment per item, in order (a new list the caller may change);
        counts as one request."""
        self._requests += 1
        earlier, shared = self._sharing(items)
        out = list(earlier.fragments[:shared]) if earlier is not None else []
        for item in items[shared:]:
            fragment = self._fragments.get(id(item))
            out.append(self._add(item) if fragment is None else fragment)
        if earlier is not None and shared == len(earlier.items):
            self._recent.remove(earlier)  # this request holds all its items
        self._recent.append(_Request(items, tuple(out), self._requests))
        if self._requests % self._keep == 0:
            self._sweep()
        return out

    def _sharing(self, items: Sequence[T]) -> tuple[_Request[T] | None, int]:
        """The newest recent request that starts as `items` does, and for how long."""
        for earlier in reversed(self._recent):
            if shared := common_prefix(earlier.items, items):
                return earlier, shared
        return None, 0

    def _add(self, item: T) -> bytes:
        fragment = self._fragments[id(item)] = self._render(item)
        self._pinned[id(item)] = item
        return fragment

    def _sweep(self) -> None:
        self._recent = [r for r in self._recent if r.number > self._requests - self._keep]
        live: set[int] = set()
        for request in self._recent:
            live.update(map(id, request.items))
        self._fragments = {k: f for k, f in self._fragments.items() if k in live}
        self._pinned = {k: item for k, item in self._pinned.items() if k in live}


class Memo(Generic[K]):
    """The last rendering of a value that is usually the same from one request to
    the next (the system prompt, the tool list), reused while the value compares
    equal. One slot: sessions with different values just render again."""

    def __init__(self, render: Callable[[K], bytes]) -> None:
        self._render = render
        self._last: tuple[K, bytes] | None = None

    def __call__(self, value: K) -> Raw:
        last = self._last
        if last is None or not (last[0] is value or last[0] == value):
            last = self._last = (value, self._render(value))
        return Raw((last[1],))
