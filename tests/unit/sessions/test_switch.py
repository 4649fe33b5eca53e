"""Runtime switches: choosing the same runtime again changes nothing; another one
continues the conversation from a transcript, and the "always" answers stay."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from loopd.protocol.events import Prompt, TextBlock
from loopd.protocol.messages import TextPart
from loopd.runtimes.native.runtime import NativeRuntimeFactory
from loopd.sessions.manager import SessionManager
from loopd.testing.fakes import Reply, ScriptedProvider
from loopd.testing.harness import RecordingLink, scripted_manager


def ask(text: str) -> Prompt:
    return Prompt((TextBlock(text),))


def two_runtimes(
    tmp_path: Path, first: ScriptedProvider, second: ScriptedProvider
) -> SessionManager:
    manager = scripted_manager(tmp_path, first, models=("m1", "m2"))
    native = manager.runtimes["native"]
    assert isinstance(native, NativeRuntimeFactory)
    wiring = replace(native.wiring, provider_for=lambda model: second)
    other = NativeRuntimeFactory("other", wiring, manager.store)
    manager.runtimes = {**manager.runtimes, "other": other}
    return manager


def sent(provider: ScriptedProvider, index: int) -> list[str]:
    return [
        p.text
        for m in provider.requests[index].messages
        for p in m.parts
        if isinstance(p, TextPart)
    ]


async def test_choosing_the_same_runtime_keeps_model_and_answers(tmp_path: Path) -> None:
    manager = two_runtimes(tmp_path, ScriptedProvider.of(Reply(text="ok")), ScriptedProvider.of())
    link = RecordingLink()
    view = await manager.new_session(str(tmp_path), link)
    await manager.set_config(view.id, "model", "m2")
    await manager.prompt(view.id, ask("hello"), link)
    runtime_before = manager._live[view.id].runtime
    again = await manager.set_config(view.id, "runtime", "native")
    assert {o.id: o.current_value for o in again.config_options}["model"] == "m2"
    assert manager._live[view.id].runtime is runtime_before  # not reopened


async def test_a_switch_hands_the_conversation_over_and_back(tmp_path: Path) -> None:
    first = ScriptedProvider.of(Reply(text="alpha noted"), Reply(text="back on the first"))
    second = ScriptedProvider.of(Reply(text="it was alpha"))
    manager = two_runtimes(tmp_path, first, second)
    link = RecordingLink()
    view = await manager.new_session(str(tmp_path), link)
    await manager.prompt(view.id, ask("remember alpha"), link)

    await manager.set_config(view.id, "runtime", "other")
    await manager.prompt(view.id, ask("what was it?"), link)
    handed = second.requests[0].messages[-1].parts
    assert "remember alpha" in handed[0].text and "alpha noted" in handed[0].text  # type: ignore[union-attr]
    assert sent(second, 0)[-1] == "what was it?"

    await manager.set_config(view.id, "runtime", "native")
    await manager.prompt(view.id, ask("and now?"), link)
    back = first.requests[1].messages[-1].parts[0].text  # type: ignore[union-attr]
    assert "it was alpha" in back  # the other runtime's turn came back too
    shown = [u["content"] for _, u in link.updates if u["sessionUpdate"] == "user_message_chunk"]
    assert all(c["text"] in ("remember alpha", "what was it?", "and now?") for c in shown)


async def test_a_pending_handover_survives_a_restart(tmp_path: Path) -> None:
    manager = two_runtimes(
        tmp_path, ScriptedProvider.of(Reply(text="noted")), ScriptedProvider.of()
    )
    link = RecordingLink()
    view = await manager.new_session(str(tmp_path), link)
    await manager.prompt(view.id, ask("remember beta"), link)
    await manager.set_config(view.id, "runtime", "other")
    await manager.shutdown()

    second = ScriptedProvider.of(Reply(text="beta"))
    restarted = two_runtimes(tmp_path, ScriptedProvider.of(), second)
    await restarted.load_session(view.id, link)
    await restarted.prompt(view.id, ask("which?"), link)
    assert "remember beta" in second.requests[0].messages[-1].parts[0].text  # type: ignore[union-attr]
