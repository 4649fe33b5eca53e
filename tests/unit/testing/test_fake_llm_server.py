from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from loopd.testing.fake_llm import ANY_ROUTE, FakeLLMServer, HttpError, Reply, load_script
from loopd.testing.llm_script import ScriptedCall, step_from_json

SCRIPT = {
    ANY_ROUTE: [{"text": "hi", "chunk": 1}],
    "/v1/messages": [
        {"error": "rate_limited", "retry_after": 2},
        {"thinking": "t", "tool_calls": [{"name": "read", "input": {"path": "a"}}], "pings": True},
    ],
}


def test_json_steps() -> None:
    assert step_from_json({"error": "overloaded", "status": 529}) == HttpError(
        "overloaded", status=529
    )
    reply = step_from_json(
        {"text": "x", "tool_calls": [{"name": "read", "id": "c"}], "fail": "auth"}
    )
    assert reply == Reply(text="x", tool_calls=(ScriptedCall("read", id="c"),), fail="auth")
    with pytest.raises(ValueError, match="unknown fields"):
        step_from_json({"txt": "typo"})


def test_route_queue_before_the_shared_one_and_requests_recorded(tmp_path: Path) -> None:
    path = tmp_path / "script.json"
    path.write_text(json.dumps(SCRIPT))
    with FakeLLMServer() as fake, httpx.Client(base_url=fake.base_url) as client:
        fake.load(load_script(path))
        limited = client.post("/v1/messages", json={"model": "m"}, headers={"x-api-key": "k"})
        assert (limited.status_code, limited.headers["retry-after"]) == (429, "2")
        assert "event: ping" in client.post("/v1/messages", json={}).text
        chat = client.post("/v1/chat/completions", json={}).text
        assert chat.rstrip().endswith("data: [DONE]")
        assert fake.pending(ANY_ROUTE) == 0
        first = fake.requests[0]
        assert (first.path, first.headers["x-api-key"], first.body) == (
            "/v1/messages",
            "k",
            {"model": "m"},
        )
        assert client.get("/_fake/requests").json()[0]["body"] == {"model": "m"}


def test_gate_holds_the_stream_until_released() -> None:
    with FakeLLMServer() as fake, httpx.Client(base_url=fake.base_url, timeout=5) as client:
        fake.script(ANY_ROUTE, Reply(text="a b", pause_after=1, gate="go"))
        with client.stream("POST", "/v1/chat/completions", json={}) as response:
            lines = response.iter_lines()
            assert '"role":"assistant"' in next(lines)
            assert client.post("/_fake/release/go").status_code == 200
            assert any("[DONE]" in line for line in lines)


def test_cli_prints_its_url_then_serves(tmp_path: Path) -> None:
    path = tmp_path / "script.json"
    path.write_text(json.dumps({ANY_ROUTE: [{"text": "from another process"}]}))
    server = Path(__file__).parents[3] / "server"
    proc = subprocess.Popen(
        [sys.executable, "-m", "loopd.testing.fake_llm", "--script", str(path)],
        stdout=subprocess.PIPE,
        text=True,
        env={"PYTHONPATH": str(server)},
    )
    try:
        assert proc.stdout is not None
        url = proc.stdout.readline().strip()
        assert url.startswith("http://127.0.0.1:")
        body = httpx.post(url + "/v1/messages", json={"model": "m"}).text
        assert "another " in body
        assert "message_stop" in body
    finally:
        proc.terminate()
        proc.wait(5)
