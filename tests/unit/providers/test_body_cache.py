"""Bodies built from cached fragments equal bodies built from scratch, and the cache
lets go of what no request uses any more."""

from __future__ import annotations

import json
from typing import Any, Protocol

import pytest
from providers_support import READ

from loopd.protocol.messages import (
    Message,
    TextPart,
    ThinkingPart,
    ToolResultPart,
    ToolUsePart,
    user_text,
)
from loopd.protocol.model import ModelRequest
from loopd.providers import anthropic, openai_chat, openai_responses
from loopd.providers.body import FragmentCache, Raw, encode_object, join_array


class Encoder(Protocol):
    def encode(self, request: ModelRequest) -> bytes: ...


ENCODERS = {
    "anthropic": anthropic.RequestEncoder,
    "openai_chat": openai_chat.RequestEncoder,
    "openai_responses": openai_responses.RequestEncoder,
}


def exchange(i: int) -> list[Message]:
    """One tool-loop round: the assistant calls a tool, the result comes back, the
    assistant answers, the person asks again."""
    return [
        Message(
            "assistant",
            (
                ThinkingPart(f"think {i}", signature=f"sig{i}"),
                TextPart("looking"),
                ToolUsePart(f"t{i}", "read", {"path": f"/w/{i}.py", "ünï": "ç"}),
            ),
        ),
        Message("user", (ToolResultPart(f"t{i}", f"contents {i}\n", is_error=i % 2 == 1),)),
        Message("assistant", (TextPart(f"answer {i}"),)),
        user_text(f"and now {i}?"),
    ]


def request(history: list[Message]) -> ModelRequest:
    return ModelRequest("m", "Be brief.", tuple(history), tools=(READ,), thinking="low")


def fresh(kind: str, req: ModelRequest) -> bytes:
    return ENCODERS[kind]().encode(req)


@pytest.mark.parametrize("kind", ENCODERS)
def test_growing_history_matches_a_fresh_build(kind: str) -> None:
    cached: Encoder = ENCODERS[kind]()
    history = [user_text("start")]
    for i in range(6):
        for message in exchange(i):
            history.append(message)
            req = request(history)
            body = cached.encode(req)
            assert body == fresh(kind, req)
            json.loads(body)  # and it is JSON


def test_anthropic_breakpoint_moves_to_the_latest_user_turn() -> None:
    cached = anthropic.RequestEncoder()
    history = [user_text("start")]
    for i in range(4):
        history += exchange(i)
        for end in (len(history) - 2, len(history)):  # tool results, then a prompt
            req = request(history[:end])
            body = json.loads(cached.encode(req))
            assert body == json.loads(fresh("anthropic", req))
            marked = [
                n
                for n, m in enumerate(body["messages"])
                if any("cache_control" in block for block in m["content"])
            ]
            latest_user = max(n for n, m in enumerate(body["messages"]) if m["role"] == "user")
            assert marked == [latest_user]
            assert body["messages"][latest_user]["content"][-1]["cache_control"] == {
                "type": "ephemeral"
            }


def test_anthropic_breakpoint_skips_a_user_turn_with_nothing_to_send() -> None:
    unsigned = Message("user", (ThinkingPart("nothing Anthropic accepts"),))
    req = request([user_text("start"), Message("assistant", (TextPart("hi"),)), unsigned])
    cached = anthropic.RequestEncoder()
    cached.encode(request([user_text("warm up")]))
    body = json.loads(cached.encode(req))
    assert body == json.loads(fresh("anthropic", req))
    assert body["messages"][0]["content"][-1]["cache_control"] == {"type": "ephemeral"}
    assert len(body["messages"]) == 2


@pytest.mark.parametrize("kind", ENCODERS)
def test_interleaved_conversations_and_retried_tails(kind: str) -> None:
    """Two sessions share one provider; a retried request shares only a prefix."""
    cached: Encoder = ENCODERS[kind]()
    a = [user_text("session a"), *exchange(0)]
    b = [user_text("session b"), *exchange(1)]
    for i in range(2, 6):
        for history in (a, b):
            history += exchange(i)
            retried = [*history[:-1], user_text(f"instead {i}")]
            for req in (request(history), request(retried), request(history[:3])):
                assert cached.encode(req) == fresh(kind, req)


@pytest.mark.parametrize("kind", ENCODERS)
def test_changed_system_and_tools_are_not_reused(kind: str) -> None:
    cached: Encoder = ENCODERS[kind]()
    history = (user_text("hi"),)
    for req in (
        ModelRequest("m", "one", history, tools=(READ,)),
        ModelRequest("m", "two", history),
        ModelRequest("m", "", history, tools=(READ,)),
    ):
        assert cached.encode(req) == fresh(kind, req)


class CountingRender:
    def __init__(self) -> None:
        self.rendered: list[str] = []

    def __call__(self, message: Message) -> bytes:
        self.rendered.append(message.text)
        return b"," + json.dumps(message.text).encode()


def test_each_message_is_rendered_once_while_in_use() -> None:
    render = CountingRender()
    cache = FragmentCache(render)
    history = [user_text(f"m{i}") for i in range(5)]
    for end in range(1, 6):
        cache.fragments(history[:end])
    cache.fragments([*history[:2], user_text("m2"), *history[3:]])  # an equal new object
    assert render.rendered == ["m0", "m1", "m2", "m3", "m4", "m2"]


def test_entries_no_request_uses_are_dropped() -> None:
    render = CountingRender()
    cache = FragmentCache(render, keep=1)
    old = [user_text(f"old{i}") for i in range(3)]
    cache.fragments(old)
    summary = [user_text("summary"), old[-1]]  # compaction kept only the last one
    cache.fragments(summary)
    assert len(cache) == 2
    cache.fragments(old)
    assert render.rendered == ["old0", "old1", "old2", "summary", "old0", "old1"]


def test_entries_survive_while_one_of_the_last_requests_used_them() -> None:
    cache = FragmentCache(CountingRender(), keep=2)
    a = [user_text("a")]
    b = [user_text("b1"), user_text("b2")]
    cache.fragments(a)
    cache.fragments(b)  # a sweep: a was used by one of the last two requests
    assert len(cache) == 3
    cache.fragments(b)
    cache.fragments(b)  # a sweep: a was not
    assert len(cache) == 2


def test_fragments_join_into_compact_json() -> None:
    fields: dict[str, Any] = {
        "model": "m",
        "empty": join_array([b"", b""]),
        "items": join_array([b"", b',{"a":1}', b',"x",2']),
        "raw": Raw((b'{"k":', b"null}")),
    }
    assert (
        encode_object(fields)
        == b'{"model":"m","empty":[],"items":[{"a":1},"x",2],"raw":{"k":null}}'
    )
