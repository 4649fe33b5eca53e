"""`/compact` for the native runtime: one model call turns the history into a summary,
and that exchange (the request and the summary) becomes the whole history.

The request carries the same system prompt and tool specs as a turn (a history with
tool calls is only valid next to the tools' definitions) and asks for text only;
tool calls in the reply are ignored. Provider failures propagate: the caller keeps
the old history and says so.
"""

from __future__ import annotations

from collections.abc import Sequence

from loopd.engine.ports import Provider
from loopd.protocol.errors import ProviderError
from loopd.protocol.messages import Message, TextPart, user_text
from loopd.protocol.model import ModelRequest, ResponseDone, ToolSpec

COMPACT_REQUEST = (
    "Summarise our conversation so far, for yourself to continue from: the task, what "
    "was decided and done (files read or changed, commands run and their results), what "
    "is left to do, and anything the person asked you to keep in mind. Be complete but "
    "brief. Reply with the summary only, without calling tools: it replaces the "
    "conversation."
)
SUMMARY_MAX_TOKENS = 4096


async def summarise(
    provider: Provider,
    model: str,
    system: str,
    history: Sequence[Message],
    tools: Sequence[ToolSpec],
) -> tuple[Message, Message]:
    """The compacted history: the request and the model's summary."""
    ask = user_text(COMPACT_REQUEST)
    request = ModelRequest(
        model=model,
        system=system,
        messages=(*history, ask),
        tools=tuple(tools),
        max_tokens=SUMMARY_MAX_TOKENS,
    )
    summary = ""
    async for event in provider.stream(request):
        if isinstance(event, ResponseDone):
            summary = "".join(p.text for p in event.parts if isinstance(p, TextPart)).strip()
    if not summary:
        raise ProviderError("the model gave no summary")
    return ask, Message("assistant", (TextPart(summary),))
