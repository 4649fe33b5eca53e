"""Agent roles: which catalog entries each agent may run on (seed 001's per-agent
entries: `RuntimeCatalogEntry.AgentType`, `EntriesFor(agent)`, `Resolve(agent, ...)`).

A role admits entries by name and may name a default among them, plus the model and
effort it uses there. `main` is the session's own agent: the runtimes a session may
choose are its entries. `explore` is the read-only child of the `explore` tool; with
no default of its own it runs on the session's runtime. Any other role the config
names is known to the catalog and shown by `loopd catalog`.

A role's model and effort apply on its default runtime (on any runtime when it has
none, since that runtime is then the parent's); a runtime chosen explicitly keeps
its own defaults. A role never widens what the catalog holds: it names entries of
this catalog, and a name it does not admit is refused, never looked up globally.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from loopd.catalog.errors import InvalidCatalog
from loopd.config.schema import EXPLORE_AGENT, MAIN_AGENT
from loopd.config.table import NAME_RE

__all__ = ["EXPLORE_AGENT", "MAIN_AGENT", "AgentScope"]


@dataclass(frozen=True, slots=True, kw_only=True)
class AgentScope:
    """One role's part of the catalog. `runtimes` is kept sorted (the order a client
    shows is the catalog's); `model` is stored as the id it selects once the catalog
    has checked it against the default entry."""

    name: str
    runtimes: tuple[str, ...] = ()
    default: str | None = None
    model: str | None = None
    effort: str | None = None

    def __post_init__(self) -> None:
        where = f"agent {self.name!r}"
        if not NAME_RE.match(self.name):
            raise InvalidCatalog(
                where, "name", "must be a name of letters, digits, '.', '_' or '-'"
            )
        runtimes = tuple(sorted(set(self.runtimes)))
        if len(runtimes) != len(self.runtimes):
            raise InvalidCatalog(where, "runtimes", "names a runtime twice")
        if self.default is not None and self.default not in runtimes:
            raise InvalidCatalog(where, "default", f"{self.default!r} is not one of its runtimes")
        object.__setattr__(self, "runtimes", runtimes)

    def admits(self, runtime: str) -> bool:
        return runtime in self.runtimes

    def selectors(self, runtime: str) -> tuple[str | None, str | None]:
        """The model and effort this role asks for on `runtime`: its own on its
        default runtime (or on any, when it has no default), none elsewhere."""
        if self.default is None or self.default == runtime:
            return self.model, self.effort
        return None, None

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "runtimes": list(self.runtimes),
            "default": self.default,
            "model": self.model,
            "effort": self.effort,
        }
