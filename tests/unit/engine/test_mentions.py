"""The `Mentions` port: what the person mentioned is read in at the turn's start, so
the model and the history get the read prompt; a turn cancelled while a read
waits ends cancelled, with nothing half-sent."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field

from loopd.protocol.events import EmbeddedResourceBlock, Prompt, ResourceLinkBlock, TextBlock
from loopd.testing.fakes import FakeToolBox, Reply, ScriptedProvider
from tests.unit.engine.test_loop import Rig

LINKED = Prompt((TextBlock("summarise"), ResourceLinkBlock("mem://notes/readme", "readme")))


@dataclass
class ReadingMentions:
    """Reads every link as the text `read:<uri>`; `hold`, when given, is awaited first."""

    hold: asyncio.Event | None = None
    asked: list[Prompt] = field(default_factory=list)
    reading: asyncio.Event = field(default_factory=asyncio.Event)

    async def resolve(self, prompt: Prompt) -> Prompt:
        self.asked.append(prompt)
        self.reading.set()
        if self.hold is not None:
            await self.hold.wait()
        return Prompt(
            tuple(
                EmbeddedResourceBlock(b.uri, f"read:{b.uri}")
                if isinstance(b, ResourceLinkBlock)
                else b
                for b in prompt.blocks
            )
        )


async def test_the_model_and_the_history_get_the_read_prompt() -> None:
    provider = ScriptedProvider.of(Reply(text="summarised"))
    rig = Rig(provider, FakeToolBox())
    engine = rig.engine()
    mentions = ReadingMentions()
    engine.ports.mentions = mentions
    outcome = await engine.run(LINKED)
    assert outcome.stop_reason == "end_turn"
    assert mentions.asked == [LINKED]
    [user] = provider.requests[0].messages
    assert (
        user.text
        == 'summarise<resource uri="mem://notes/readme">\nread:mem://notes/readme\n</resource>'
    )
    assert engine.history[0] == user


async def test_a_turn_cancelled_while_a_read_waits_ends_cancelled() -> None:
    provider = ScriptedProvider.of(Reply(text="never"))
    rig = Rig(provider, FakeToolBox())
    engine = rig.engine()
    mentions = ReadingMentions(hold=asyncio.Event())
    engine.ports.mentions = mentions
    turn = asyncio.create_task(engine.run(LINKED))
    async with asyncio.timeout(5):
        await mentions.reading.wait()
    turn.cancel()
    async with asyncio.timeout(5):
        outcome = await turn
    assert outcome.stop_reason == "cancelled"
    assert provider.requests == []
