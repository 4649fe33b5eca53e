"""What `loopd catalog [--json]` and `loopd doctor` print. Both renderings come from
the entries' secret-free projection, so neither can show a key or an env value.

`listed` holds what the endpoints of entries without a configured model list served
(`loopd.catalog.listing`): those models are shown, and an entry that got none says so.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from loopd.catalog.agents import EXPLORE_AGENT, AgentScope
from loopd.catalog.catalog import RuntimeCatalog
from loopd.catalog.entry import RuntimeEntry, public_url
from loopd.catalog.errors import NO_RUNTIME_HELP
from loopd.catalog.roles import Skipped

if TYPE_CHECKING:
    from loopd.providers.models import Listed

_HEADERS = ("RUNTIME", "HARNESS", "SOURCE", "MODELS", "EFFORTS", "DETAILS")
_AGENT_HEADERS = ("AGENT", "DEFAULT", "RUNTIMES")


def catalog_to_json(
    catalog: RuntimeCatalog,
    skipped: Iterable[Skipped] = (),
    listed: Mapping[str, Listed] | None = None,
) -> dict[str, Any]:
    """`{"default", "digest", "entries": [...], "agents": [{"name", "runtimes",
    "default", "model", "effort"}], "skipped": [{"name", "reason"}]}`; an entry whose
    endpoint was asked also has `"listed_models"` (and `"listing_problem"` when it
    could not be asked)."""
    data = catalog.to_json()
    for entry in data["entries"]:
        found = (listed or {}).get(entry["name"])
        if found is not None:
            entry["listed_models"] = list(found.models)
            entry |= {"listing_problem": found.problem} if found.problem else {}
    return data | {"skipped": [{"name": item.name, "reason": item.reason} for item in skipped]}


def catalog_to_text(
    catalog: RuntimeCatalog,
    skipped: Iterable[Skipped] = (),
    listed: Mapping[str, Listed] | None = None,
) -> str:
    """A plain table, one runtime per row, the default marked with `*`; then one row
    per agent role (its default, with its model and effort, and the runtimes it may
    run on); then what was skipped, the entries that have no model and why, and the
    digest."""
    listed = listed or {}
    rows = [_row(entry, entry.name == catalog.default, listed.get(entry.name)) for entry in catalog]
    lines = _table([_HEADERS, *rows]) if rows else [f"no runtimes available: {NO_RUNTIME_HELP}"]
    if rows:
        lines += ["", *_table([_AGENT_HEADERS, *(_agent_row(role) for role in catalog.agents)])]
    lines += [f"skipped {item.name}: {item.reason}" for item in skipped]
    lines += [
        f"no model for {name}: {found.problem or 'its endpoint lists none'}; set "
        f'models = ["..."] under [providers.{name}] in config.toml'
        for name, found in listed.items()
        if not found.models
    ]
    lines.append(f"digest {catalog.digest}")
    return "\n".join(lines) + "\n"


def _row(entry: RuntimeEntry, is_default: bool, listed: Listed | None) -> tuple[str, ...]:
    return (
        f"{entry.name}{' *' if is_default else ''}",
        entry.harness.value,
        entry.source,
        _models(entry, listed),
        _efforts(entry),
        _details(entry),
    )


def _agent_row(role: AgentScope) -> tuple[str, ...]:
    chosen = ", ".join(v for v in (role.model, role.effort) if v is not None)
    if role.default is None:
        default = "(the session's runtime)" if role.name == EXPLORE_AGENT else "-"
    else:
        default = role.default
    default += f" ({chosen})" if chosen else ""
    return (role.name, default, ", ".join(role.runtimes) or "-")


def _models(entry: RuntimeEntry, listed: Listed | None) -> str:
    if entry.selection == "harness_managed":
        return "(chosen by the CLI)"
    if listed is not None:  # asked of the endpoint: the first is what a session uses
        return ", ".join(f"{m}{'*' if i == 0 else ''}" for i, m in enumerate(listed.models)) or (
            "(none listed)"
        )
    names = [
        option.id
        + ("*" if option.id == entry.default_model else "")
        + (" (small)" if option.id == entry.small_model else "")
        for option in entry.models
    ]
    if entry.open_models:
        names.append("(any)")
    return ", ".join(names) or "-"


def _efforts(entry: RuntimeEntry) -> str:
    marked = [f"{e}{'*' if e == entry.default_effort else ''}" for e in entry.efforts]
    return ", ".join(marked) or "-"


def _details(entry: RuntimeEntry) -> str:
    if entry.provider is not None:
        key = f" key ${entry.provider.api_key_env}" if entry.provider.api_key_env else ""
        return f"{entry.provider.kind.value} {public_url(entry.provider.base_url)}{key}"
    version = entry.version or "version unknown"
    return f"{entry.command} ({version})"


def _table(rows: Sequence[Sequence[str]]) -> list[str]:
    widths = [max(len(row[column]) for row in rows) for column in range(len(rows[0]))]
    return [
        "  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip()
        for row in rows
    ]
