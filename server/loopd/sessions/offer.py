"""`RuntimeOffer`: which runtimes the session manager offers, and who each one is.

The runtimes a new session may run on change while loopd runs (a login, a trusted
workspace file: `refresh_runtimes`, through the app's `Credentials`, which offers
them with `SessionManager.use_runtimes`); open sessions keep theirs. A stored
session records the catalog's identity of its runtime, and a load tells the person
once what changed in that entry since (`_reidentify`). A mixin of `SessionManager`,
which it reaches through `_Offering` only.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import Any, Protocol

from loopd.catalog.identity import entry_changes
from loopd.protocol.errors import ConfigError
from loopd.runtimes.base import RuntimeFactory
from loopd.sessions.errors import NoRuntime
from loopd.store.sqlite import SessionRecord, SqliteStore


class Credentials(Protocol):
    """Where runtimes get their credentials: read again after a login, forgotten
    at logout. Either way the manager is then offered the runtimes they give."""

    async def reload(self) -> None: ...

    async def logout(self) -> None: ...


class _Offering(Protocol):
    @property
    def runtimes(self) -> Mapping[str, RuntimeFactory]: ...

    @property
    def default_runtime(self) -> str: ...

    @property
    def identify(self) -> Callable[[str, Mapping[str, str]], Mapping[str, Any]]: ...

    @property
    def store(self) -> SqliteStore: ...

    @property
    def no_runtime_help(self) -> str: ...

    @property
    def no_default_help(self) -> str: ...

    @property
    def credentials(self) -> Credentials | None: ...


class RuntimeOffer:
    def _reidentify(
        self: _Offering, record: SessionRecord
    ) -> tuple[SessionRecord, tuple[str, ...]]:
        """What changed in the catalog entry of a stored session since it was last
        open; when something did, the record takes the identity it resolves to now
        (so the person is told once, not on every load)."""
        name = str(record.runtime.get("name", self.default_runtime))
        stored = record.runtime.get("identity")
        if not isinstance(stored, Mapping):
            return record, ()
        identity = identity_of(self, name, record.config)
        changed = entry_changes(stored, identity["identity"])
        if changed:
            self.store.update(record.id, runtime=identity)
            record = replace(record, runtime=identity)
        return record, changed

    def _identity(self: _Offering, name: str, config: Mapping[str, str]) -> dict[str, Any]:
        return identity_of(self, name, config)

    async def refresh_runtimes(self: _Offering) -> bool:
        """Look again for credentials (`loopd login` may have run meanwhile); True
        when a session can now be opened."""
        if self.credentials is not None:
            await self.credentials.reload()
        return bool(self.runtimes)

    async def logout(self: _Offering) -> None:
        """Forget the stored login; credentials from the environment still apply."""
        if self.credentials is not None:
            await self.credentials.logout()

    def _factory(self: _Offering, name: str) -> RuntimeFactory:
        if not self.runtimes:
            raise NoRuntime(f"no runtime is available: {self.no_runtime_help}")
        if not name:
            raise ConfigError(self.no_default_help)
        factory = self.runtimes.get(name)
        if factory is None:
            known = ", ".join(sorted(self.runtimes)) or "none"
            raise ConfigError(f"unknown runtime {name!r} (configured: {known})")
        return factory


def identity_of(offer: _Offering, name: str, config: Mapping[str, str]) -> dict[str, Any]:
    """What a session records about who runs it: the runtime's name and identity."""
    return {"name": name, "identity": dict(offer.identify(name, config))}
