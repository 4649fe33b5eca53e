"""What `loopd catalog [--json]` and `loopd doctor` print. Both renderings come from
the entries' secret-free projection, so neither can show a key or an env value."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from loopd.catalog.build import Skipped
from loopd.catalog.catalog import RuntimeCatalog
from loopd.catalog.entry import RuntimeEntry, public_url
from loopd.catalog.errors import NO_RUNTIME_HELP

_HEADERS = ("RUNTIME", "HARNESS", "SOURCE", "MODELS", "EFFORTS", "DETAILS")


def catalog_to_json(catalog: RuntimeCatalog, skipped: Iterable[Skipped] = ()) -> dict[str, Any]:
    """`{"default", "digest", "entries": [...], "skipped": [{"name", "reason"}]}`."""
    return {
        **catalog.to_json(),
        "skipped": [{"name": item.name, "reason": item.reason} for item in skipped],
    }


def catalog_to_text(catalog: RuntimeCatalog, skipped: Iterable[Skipped] = ()) -> str:
    """A plain table, one runtime per row, the default marked with `*`; then what was
    skipped and the digest."""
    rows = [_row(entry, entry.name == catalog.default) for entry in catalog]
    lines = _table([_HEADERS, *rows]) if rows else [f"no runtimes available: {NO_RUNTIME_HELP}"]
    lines += [f"skipped {item.name}: {item.reason}" for item in skipped]
    lines.append(f"digest {catalog.digest}")
    return "\n".join(lines) + "\n"


def _row(entry: RuntimeEntry, is_default: bool) -> tuple[str, ...]:
    return (
        f"{entry.name}{' *' if is_default else ''}",
        entry.harness.value,
        entry.source,
        _models(entry),
        _efforts(entry),
        _details(entry),
    )


def _models(entry: RuntimeEntry) -> str:
    if entry.selection == "harness_managed":
        return "(chosen by the CLI)"
    names = [
        f"{option.id}{'*' if option.id == entry.default_model else ''}" for option in entry.models
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
