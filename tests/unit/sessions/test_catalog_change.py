"""A session loaded after its runtime's catalog entry changed is told what changed,
once; a change elsewhere in the catalog says nothing."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from loopd.catalog import ModelOption, ProviderRef, RuntimeCatalog, RuntimeEntry
from loopd.config import Harness, ProviderKind
from loopd.protocol.events import NOTICE_META
from loopd.sessions.manager import SessionManager
from loopd.testing.fakes import ScriptedProvider
from loopd.testing.harness import RecordingLink, scripted_manager


def entry(name: str = "native", models: tuple[str, ...] = ("m1", "m2")) -> RuntimeEntry:
    return RuntimeEntry(
        name=name,
        harness=Harness.NATIVE,
        provider=ProviderRef(kind=ProviderKind.ANTHROPIC, base_url="http://127.0.0.1:1"),
        models=tuple(ModelOption(id=m) for m in models),
        default_model=models[0],
    )


def manager_on(tmp_path: Path, catalog: RuntimeCatalog) -> SessionManager:
    manager = scripted_manager(tmp_path, ScriptedProvider.of(), models=("m1", "m2"))
    manager.identify = lambda name, config: catalog.resolve(name).identity().to_json()
    return manager


def notes(link: RecordingLink) -> list[dict[str, Any]]:
    return [
        u
        for _, u in link.updates
        if u["sessionUpdate"] == "agent_message_chunk"
        and u.get("_meta", {}).get(NOTICE_META) == "note"
    ]


async def test_a_loaded_session_is_told_its_entry_changed_once(tmp_path: Path) -> None:
    first = manager_on(tmp_path, RuntimeCatalog((entry(),), "native"))
    view = await first.new_session(str(tmp_path), RecordingLink())
    await first.shutdown()

    same = manager_on(tmp_path, RuntimeCatalog((entry(), entry("other")), "native"))
    link = RecordingLink()
    await same.load_session(view.id, link)
    assert notes(link) == []  # another entry was added: this one did not change
    await same.shutdown()

    changed = manager_on(tmp_path, RuntimeCatalog((entry(models=("m1", "m3")),), "native"))
    link = RecordingLink()
    await changed.load_session(view.id, link)
    [note] = notes(link)
    assert "`native` runtime changed in the catalog" in note["content"]["text"]
    assert "(models)" in note["content"]["text"]
    assert note["_meta"]["loopd"]["catalogChanged"] == ["models"]
    stored = changed.store.get(view.id)
    assert stored is not None
    assert stored.runtime["identity"]["entry_fields"]["models"]  # the new identity is kept
    await changed.close_session(view.id)

    again = RecordingLink()
    await changed.load_session(view.id, again)
    assert notes(again) == []  # told once, not on every load
    await changed.shutdown()
