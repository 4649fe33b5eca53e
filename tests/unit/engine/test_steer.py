"""Steering: what the person says mid-turn is read at the turn's next step; a reply
being streamed is interrupted for it; nothing said is ever dropped."""

from __future__ import annotations

import asyncio

from loopd.engine.loop import Engine
from loopd.engine.steer import STEER_PREFIX, SteerBox
from loopd.protocol.events import Prompt, TextBlock, UserMessageChunk
from loopd.protocol.messages import TextPart
from loopd.testing.fakes import FakeToolBox, RecordingEmitter, Reply, ScriptedProvider
from tests.unit.engine.test_loop import Rig


def engine_with(
    provider: ScriptedProvider, box: SteerBox, tools: FakeToolBox | None = None
) -> tuple[Engine, RecordingEmitter]:
    rig = Rig(provider, tools or FakeToolBox())
    engine = rig.engine()
    engine.ports.steer = box
    return engine, rig.emitter


def ask(text: str) -> Prompt:
    return Prompt((TextBlock(text),))


async def test_steering_interrupts_a_streaming_reply_and_is_read_next() -> None:
    held = asyncio.Event()  # never set: the reply would stream forever
    provider = ScriptedProvider.of(
        Reply(text="I will rewrite the whole module", hold=held), Reply(text="Only the test, then.")
    )
    box = SteerBox()
    engine, emitter = engine_with(provider, box)
    turn = asyncio.create_task(engine.run(ask("fix it")))
    async with asyncio.timeout(5):
        await provider.started.wait()
    assert box.push("only touch the test")
    async with asyncio.timeout(5):
        outcome = await turn

    assert outcome.stop_reason == "end_turn" and outcome.iterations == 2
    second = provider.requests[1].messages
    assert [m.role for m in second] == ["user", "assistant", "user"]
    assert second[1].text == "I will rewrite the whole module"  # what it had said
    assert second[2].text == f"{STEER_PREFIX}\nonly touch the test"
    shown = emitter.of(UserMessageChunk)
    assert [e.content for e in shown] == [TextBlock("only touch the test")]
    assert engine.history[-1].text == "Only the test, then."
    assert not box.push("too late")  # the turn is over: send a prompt instead


async def test_a_steered_reply_keeps_its_words_and_drops_its_thinking_and_half_call() -> None:
    """Seed 002 deletes the interrupted reply; loopd keeps the words the person saw
    (in the next request and in the journal, so a reloaded session has them too) and
    drops what a provider would refuse: unsigned thinking, a call with no result."""
    held = asyncio.Event()  # never set: interrupted before the call is complete
    half = Reply(thinking="plan it", text="Rewriting it all", tools=[("t1", "bash", {})], hold=held)
    provider = ScriptedProvider.of(half, Reply(text="Only the test."))
    rig = Rig(provider, FakeToolBox())
    engine = rig.engine()
    engine.ports.steer = box = SteerBox()
    turn = asyncio.create_task(engine.run(ask("fix it")))
    async with asyncio.timeout(5):
        await provider.started.wait()
    assert box.push("only the test")
    async with asyncio.timeout(5):
        outcome = await turn
    assert outcome.stop_reason == "end_turn"
    kept = provider.requests[1].messages[1]
    assert kept.role == "assistant"
    assert kept.parts == (TextPart("Rewriting it all"),)
    assert kept in rig.journal.messages
    assert rig.tools.started == []  # the half-made call never ran


async def test_steering_during_a_tool_waits_for_it_and_is_read_at_the_next_step() -> None:
    hold = asyncio.Event()
    tools = FakeToolBox(hold=hold)
    provider = ScriptedProvider.of(
        Reply(tools=[("t1", "bash", {"command": "make"})]), Reply(text="ok")
    )
    box = SteerBox()
    engine, _ = engine_with(provider, box, tools)
    turn = asyncio.create_task(engine.run(ask("build")))
    async with asyncio.timeout(5):
        await tools.running.wait()
    assert box.push("use -j4")
    hold.set()  # the tool finishes: it was not interrupted
    async with asyncio.timeout(5):
        await turn
    second = provider.requests[1].messages
    assert second[2].tool_results[0].content == "bash ok"
    assert second[3].text == f"{STEER_PREFIX}\nuse -j4"


async def test_text_said_as_the_reply_ends_is_answered_in_the_same_turn() -> None:
    finish = asyncio.Event()
    provider = ScriptedProvider.of(Reply(text="done", hold=finish), Reply(text="and yes"))
    box = SteerBox()
    engine, _ = engine_with(provider, box)

    async def say_then_finish() -> None:
        await provider.started.wait()
        box.push("also check the docs")
        finish.set()

    helper = asyncio.create_task(say_then_finish())
    async with asyncio.timeout(5):
        outcome = await engine.run(ask("go"))
    await helper
    assert outcome.iterations == 2
    assert provider.requests[1].messages[-1].text.endswith("also check the docs")
