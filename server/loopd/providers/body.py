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

import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

T = TypeVar("T")
K = TypeVar("K")

KEEP_REQUESTS = 16
"""How many requests a fragment survives unused. One provider serves every session
of a runtime, so two conversations interleave their requests; dropping everything
not in the latest request would re-encode each one from scratch every time."""


def dumps(value: Any) -> bytes:
    """`value` as JSON bytes, encoded exactly as httpx encodes a `json=` body."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode()


@dataclass(frozen=True, slots=True)
class Raw:
    """JSON that is already serialised, spliced into a body verbatim."""

    data: bytes


def elements(values: Iterable[Any]) -> bytes:
    """A fragment of comma-separated array elements: one history message can be
    several wire messages, or none."""
    return b",".join(dumps(v) for v in values)


def join_array(fragments: Iterable[bytes]) -> Raw:
    """A JSON array of the non-empty `fragments` (each one or more comma-separated
    elements; empty for an item that has nothing on the wire)."""
    return Raw(b"[" + b",".join(f for f in fragments if f) + b"]")


def encode_object(fields: Mapping[str, Any]) -> bytes:
    """A JSON object with the keys of `fields` in order; `Raw` values go in as they
    are, anything else is encoded here."""
    members = [
        dumps(key) + b":" + (value.data if isinstance(value, Raw) else dumps(value))
        for key, value in fields.items()
    ]
    return b"{" + b",".join(members) + b"}"


class _Entry:
    __slots__ = ("fragment", "item", "used")

    def __init__(self, item: object, fragment: bytes, used: int) -> None:
        self.item, self.fragment, self.used = item, fragment, used


class FragmentCache(Generic[T]):
    """The encoded fragment of each item, rendered once per provider instance.

    Items are keyed by identity, which is sound only because they are immutable and
    the entry keeps the item referenced (so its id cannot be reused while cached).
    Equal items that are distinct objects (a history reloaded from the store) are
    simply rendered again. Every `keep` requests the cache drops the entries that
    none of the last `keep` requests used, so messages compacted away or belonging
    to a closed session do not pin memory for long."""

    def __init__(self, render: Callable[[T], bytes], *, keep: int = KEEP_REQUESTS) -> None:
        self._render = render
        self._keep = keep
        self._entries: dict[int, _Entry] = {}
        self._requests = 0

    def __len__(self) -> int:
        return len(self._entries)

    def fragments(self, items: Sequence[T]) -> list[bytes]:
        """One fragment per item, in order; counts as one request."""
        self._requests += 1
        now, entries, out = self._requests, self._entries, []
        for item in items:
            entry = entries.get(id(item))
            if entry is None:
                entry = entries[id(item)] = _Entry(item, self._render(item), now)
            entry.used = now
            out.append(entry.fragment)
        if now % self._keep == 0:
            self._entries = {k: e for k, e in entries.items() if e.used > now - self._keep}
        return out


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
        return Raw(last[1])
