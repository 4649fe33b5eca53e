"""Which stream a message goes on (the transport RFD's rules)."""

from __future__ import annotations

from loopd.remote.routing import Routes


def test_session_answers_come_on_the_connection_stream_and_open_the_session() -> None:
    routes = Routes()
    routes.inbound({"id": 2, "method": "session/new", "params": {"cwd": "/w"}})
    assert routes.outbound({"id": 2, "result": {"sessionId": "s1"}}) is None
    assert "s1" in routes.sessions
    routes.inbound({"id": 3, "method": "session/prompt", "params": {"sessionId": "s1"}})
    update = {"method": "session/update", "params": {"sessionId": "s1", "update": {}}}
    assert routes.outbound(update) == "s1"
    assert routes.outbound({"id": 3, "result": {"stopReason": "end_turn"}}) == "s1"


def test_a_load_s_replay_comes_on_the_connection_stream_before_its_answer() -> None:
    routes = Routes()
    routes.inbound({"id": "7", "method": "session/load", "params": {"sessionId": "s2"}})
    replay = {"method": "session/update", "params": {"sessionId": "s2", "update": {}}}
    assert routes.outbound(replay) is None
    assert routes.outbound({"id": 7, "result": {}}) is None  # "7" and 7 are one id
    assert routes.outbound(replay) == "s2"  # live, once loaded


def test_agent_requests_without_a_session_use_the_connection_stream() -> None:
    routes = Routes()
    assert routes.outbound({"id": 0, "method": "fs/read_text_file", "params": {}}) is None
