"""The session layer over the real store and the native runtime with a scripted model."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from loopd.engine.ports import Verdict
from loopd.mcp.config import McpServerConfig
from loopd.protocol.approvals import ApprovalDecision
from loopd.protocol.errors import ConfigError
from loopd.protocol.events import ConfigOption, Prompt, TextBlock
from loopd.runtimes.base import Runtime, RuntimeContext
from loopd.runtimes.foreign.claude import ClaudeRuntimeFactory, ClaudeSettings
from loopd.sessions.manager import SessionManager, SessionNotFound
from loopd.testing.fakes import FakeToolBox, Reply, ScriptedPolicy, ScriptedProvider
from loopd.testing.harness import RecordingLink, scripted_manager


def ask(text: str) -> Prompt:
    return Prompt((TextBlock(text),))


def text_of(link: RecordingLink) -> str:
    return "".join(
        u["content"]["text"] for _, u in link.updates if u["sessionUpdate"] == "agent_message_chunk"
    )


async def test_a_turn_streams_to_the_link_and_is_journaled(tmp_path: Path) -> None:
    manager = scripted_manager(tmp_path, ScriptedProvider.of(Reply(text="hello you")))
    link = RecordingLink()
    view = await manager.new_session(str(tmp_path), link)
    outcome = await manager.prompt(view.id, ask("say hello"), link)

    assert outcome.stop_reason == "end_turn"
    assert text_of(link) == "hello you"
    assert link.kinds()[0] == "session_info_update"
    journal = manager.store.events(view.id)
    assert [e["sessionUpdate"] for e in journal][:2] == [
        "user_message_chunk",
        "session_info_update",
    ]
    assert manager.store.get(view.id).title == "say hello"  # type: ignore[union-attr]


async def test_load_in_a_new_manager_replays_and_continues(tmp_path: Path) -> None:
    first = scripted_manager(tmp_path, ScriptedProvider.of(Reply(text="one")))
    link = RecordingLink()
    view = await first.new_session(str(tmp_path), link)
    await first.prompt(view.id, ask("first"), link)
    await first.shutdown()

    provider = ScriptedProvider.of(Reply(text="two"))
    second = scripted_manager(tmp_path, provider)
    other = RecordingLink()
    await second.load_session(view.id, other)
    assert other.kinds()[:2] == ["user_message_chunk", "session_info_update"]
    assert "one" in text_of(other)
    await second.prompt(view.id, ask("second"), other)
    sent = provider.requests[0].messages
    assert [m.role for m in sent] == ["user", "assistant", "user"]
    assert sent[1].text == "one"


async def test_prompts_queue_in_order_and_never_interleave(tmp_path: Path) -> None:
    hold = asyncio.Event()
    provider = ScriptedProvider.of(Reply(text="A", hold=hold), Reply(text="B"))
    manager = scripted_manager(tmp_path, provider)
    link = RecordingLink()
    view = await manager.new_session(str(tmp_path), link)
    first = asyncio.create_task(manager.prompt(view.id, ask("1"), link))
    await provider.started.wait()
    second = asyncio.create_task(manager.prompt(view.id, ask("2"), link))
    await asyncio.sleep(0.01)
    assert len(provider.requests) == 1
    hold.set()
    assert (await first).stop_reason == "end_turn"
    assert (await second).stop_reason == "end_turn"
    assert text_of(link) == "A\n\n[Queued: '2' runs after 1 turn.]\nB"  # told it waits


async def test_cancel_ends_the_running_turn_and_the_queued_ones(tmp_path: Path) -> None:
    provider = ScriptedProvider.of(Reply(text="A", hold=asyncio.Event()), Reply(text="after"))
    manager = scripted_manager(tmp_path, provider)
    link = RecordingLink()
    view = await manager.new_session(str(tmp_path), link)
    running = asyncio.create_task(manager.prompt(view.id, ask("1"), link))
    await provider.started.wait()
    queued = asyncio.create_task(manager.prompt(view.id, ask("2"), link))
    await asyncio.sleep(0)
    await manager.cancel(view.id)
    assert (await running).stop_reason == "cancelled"
    assert (await queued).stop_reason == "cancelled"
    assert (await manager.prompt(view.id, ask("3"), link)).stop_reason == "end_turn"


async def test_approvals_go_to_the_prompting_link(tmp_path: Path) -> None:
    provider = ScriptedProvider.of(Reply(tools=[("w", "write", {"path": "/a"})]), Reply(text="k"))
    tools = FakeToolBox()
    manager = scripted_manager(tmp_path, provider, tools, ScriptedPolicy({"write": Verdict.ASK}))
    watcher, asker = RecordingLink(), RecordingLink(answers=[ApprovalDecision.ALLOW_ONCE])
    view = await manager.new_session(str(tmp_path), watcher)
    await manager.load_session(view.id, asker, replay=False)
    await manager.prompt(view.id, ask("write"), asker)
    assert [r.title for r in asker.asked] == ["Write /a"]
    assert watcher.asked == []
    assert tools.started == ["w"]
    assert "tool_call" in watcher.kinds()


async def test_an_approval_nobody_answers_is_a_rejection(tmp_path: Path) -> None:
    provider = ScriptedProvider.of(Reply(tools=[("w", "write", {"path": "/a"})]), Reply(text="k"))
    tools = FakeToolBox()
    manager = scripted_manager(tmp_path, provider, tools, ScriptedPolicy({"write": Verdict.ASK}))
    manager.approval_timeout = 0.01
    link = RecordingLink()
    view = await manager.new_session(str(tmp_path), link)
    assert (await manager.prompt(view.id, ask("write"), link)).stop_reason == "end_turn"
    assert tools.started == []


async def test_config_options_validate_and_persist(tmp_path: Path) -> None:
    manager = scripted_manager(tmp_path, ScriptedProvider.of())
    link = RecordingLink()
    view = await manager.new_session(str(tmp_path), link)
    assert {o.id: o.current_value for o in view.config_options} == {
        "mode": "ask",
        "model": "scripted",
        "thought_level": "off",
        "runtime": "native",
    }
    changed = await manager.set_config(view.id, "mode", "full_auto")
    assert {o.id: o.current_value for o in changed.config_options}["mode"] == "full_auto"
    assert link.kinds()[-2:] == ["current_mode_update", "config_option_update"]
    assert manager.store.get(view.id).config["mode"] == "full_auto"  # type: ignore[union-attr]
    with pytest.raises(ConfigError):
        await manager.set_config(view.id, "mode", "yolo")
    with pytest.raises(ConfigError):
        await manager.set_config(view.id, "colour", "red")


async def test_list_pages_and_filters_by_cwd(tmp_path: Path) -> None:
    manager = scripted_manager(tmp_path, ScriptedProvider.of())
    link = RecordingLink()
    ids = [(await manager.new_session(f"/w/{i % 2}", link)).id for i in range(5)]
    page = manager.store.list_sessions(limit=2)
    assert [s.id for s in page.sessions] == ids[::-1][:2]
    rest = manager.store.list_sessions(cursor=page.next_cursor, limit=10)
    assert [s.id for s in rest.sessions] == ids[::-1][2:]
    assert rest.next_cursor is None
    assert {s.cwd for s in manager.list_sessions(cwd="/w/1").sessions} == {"/w/1"}


async def test_unknown_sessions_are_clear_errors(tmp_path: Path) -> None:
    manager: SessionManager = scripted_manager(tmp_path, ScriptedProvider.of())
    with pytest.raises(SessionNotFound):
        await manager.load_session("nope", RecordingLink())
    with pytest.raises(SessionNotFound):
        await manager.prompt("nope", ask("x"), RecordingLink())
    with pytest.raises(SessionNotFound):
        await manager.delete_session("nope")


async def test_delete_removes_the_session_everywhere(tmp_path: Path) -> None:
    manager = scripted_manager(tmp_path, ScriptedProvider.of())
    view = await manager.new_session(str(tmp_path), RecordingLink())
    await manager.delete_session(view.id)
    assert manager.store.get(view.id) is None
    assert manager.store.events(view.id) == []


async def test_a_caller_that_gives_up_cancels_its_turn_first(tmp_path: Path) -> None:
    provider = ScriptedProvider.of(Reply(text="A", hold=asyncio.Event()), Reply(text="B"))
    manager = scripted_manager(tmp_path, provider)
    link = RecordingLink()
    view = await manager.new_session(str(tmp_path), link)
    first = asyncio.create_task(manager.prompt(view.id, ask("1"), link))
    await provider.started.wait()
    second = asyncio.create_task(manager.prompt(view.id, ask("2"), link))
    await asyncio.sleep(0)
    first.cancel()
    with pytest.raises(asyncio.CancelledError):
        await first
    assert (await second).stop_reason == "end_turn"
    assert [m.role for m in provider.requests[1].messages] == ["user", "user"]


async def test_config_changes_are_shown_on_every_link(tmp_path: Path) -> None:
    manager = scripted_manager(tmp_path, ScriptedProvider.of())
    one, two = RecordingLink(), RecordingLink()
    view = await manager.new_session(str(tmp_path), one)
    await manager.load_session(view.id, two, replay=False)
    await manager.set_config(view.id, "thought_level", "high")
    for link in (one, two):
        update = link.updates[-1][1]
        assert update["sessionUpdate"] == "config_option_update"
        current = {o["id"]: o["currentValue"] for o in update["configOptions"]}
        assert current["thought_level"] == "high"


@dataclass
class OpenedClaude:
    """Opens Claude Code runtimes (never started by these tests), keeping each context."""

    name: str = "claude"
    contexts: list[RuntimeContext] = field(default_factory=list)

    async def open(self, context: RuntimeContext) -> Runtime:
        self.contexts.append(context)
        settings = ClaudeSettings(
            binary="/nonexistent/claude",
            models=("sonnet", "opus"),
            default_model="sonnet",
            efforts=("low", "high"),
        )
        return await ClaudeRuntimeFactory(settings).open(context)


def with_claude(manager: SessionManager, opened: OpenedClaude | None = None) -> SessionManager:
    manager.runtimes = {**manager.runtimes, "claude": opened or OpenedClaude()}
    return manager


def current(options: tuple[ConfigOption, ...]) -> dict[str, str]:
    return {o.id: o.current_value for o in options}


async def test_a_runtime_chosen_at_new_offers_its_own_model_and_effort(tmp_path: Path) -> None:
    manager = with_claude(scripted_manager(tmp_path, ScriptedProvider.of()))
    view = await manager.new_session(str(tmp_path), RecordingLink(), config={"runtime": "claude"})
    assert current(view.config_options) == {
        "mode": "ask",
        "model": "sonnet",
        "thought_level": "default",
        "runtime": "claude",
    }
    [effort] = [o for o in view.config_options if o.id == "thought_level"]
    assert [c.value for c in effort.choices] == ["default", "low", "high"]
    changed = await manager.set_config(view.id, "thought_level", "high")
    assert current(changed.config_options)["thought_level"] == "high"
    with pytest.raises(ConfigError):
        await manager.set_config(view.id, "thought_level", "off")


async def test_switching_runtime_keeps_the_mode_and_takes_the_new_defaults(
    tmp_path: Path,
) -> None:
    opened = OpenedClaude()
    manager = with_claude(scripted_manager(tmp_path, ScriptedProvider.of()), opened)
    files = McpServerConfig("files", command="mcp-files")
    view = await manager.new_session(str(tmp_path), RecordingLink(), mcp_servers=[files])
    await manager.set_config(view.id, "mode", "plan")
    switched = await manager.set_config(view.id, "runtime", "claude")
    assert current(switched.config_options) == {
        "mode": "plan",
        "model": "sonnet",
        "thought_level": "default",
        "runtime": "claude",
    }
    record = manager.store.get(view.id)
    assert record is not None
    assert record.config == {"mode": "plan", "model": "sonnet", "thought_level": "default"}
    assert record.runtime["name"] == "claude"
    assert opened.contexts[-1].mcp_servers == (files,)  # the editor's servers follow


@dataclass
class HeldOpen:
    """A factory whose runtimes open only once the test lets them."""

    inner: object
    release: asyncio.Event = field(default_factory=asyncio.Event)
    opening: asyncio.Event = field(default_factory=asyncio.Event)

    async def open(self, context: RuntimeContext) -> Runtime:
        self.opening.set()
        await self.release.wait()
        return await self.inner.open(context)  # type: ignore[attr-defined, no-any-return]


async def test_requests_that_arrive_while_a_load_opens_the_session_wait_for_it(
    tmp_path: Path,
) -> None:
    """Zed loads the session; Neovim's load, its option change and its prompt arrive
    before the runtime has opened: each waits for the open, none meets no runtime."""
    first = scripted_manager(tmp_path, ScriptedProvider.of(Reply(text="one")))
    link = RecordingLink()
    view = await first.new_session(str(tmp_path), link)
    await first.shutdown()

    provider = ScriptedProvider.of(Reply(text="two"))
    second = scripted_manager(tmp_path, provider)
    held = HeldOpen(second.runtimes["native"])
    second.runtimes = {**second.runtimes, "native": held}  # type: ignore[dict-item]
    zed, nvim = RecordingLink(), RecordingLink()
    loading = asyncio.create_task(second.load_session(view.id, zed))
    await held.opening.wait()
    joining = asyncio.create_task(second.load_session(view.id, nvim, replay=False))
    prompting = asyncio.create_task(second.prompt(view.id, ask("hi"), nvim))
    await asyncio.sleep(0.05)
    assert not (joining.done() or prompting.done())
    held.release.set()
    loaded, joined = await loading, await joining
    assert (await prompting).stop_reason == "end_turn"
    assert joined.config_options == loaded.config_options != ()  # the real runtime's
    assert text_of(nvim) == "two"
