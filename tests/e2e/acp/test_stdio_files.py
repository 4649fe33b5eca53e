"""`loopd acp` and `loopd lsp` given whatever a shell can give them: a regular file of
requests and a regular file for the answers, `/dev/null`, a closed descriptor. Each
either serves and exits at the end of its input, or says why it cannot."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from loopd.testing.llm_script import Reply, ScriptedCall
from tests.e2e.acp.conftest import Home

pytestmark = pytest.mark.e2e
LOOPD = [sys.executable, "-m", "loopd"]


def _request(rid: int, method: str, params: dict[str, object]) -> str:
    return json.dumps({"jsonrpc": "2.0", "id": rid, "method": method, "params": params})


def _batch(home: Home, *requests: str) -> list[dict[str, Any]]:
    """`loopd acp < file > file`: every message it wrote. The last request has no
    newline after it (a file need not end with one); stderr says why it ended."""
    given, answers = home.root / "batch.jsonl", home.root / "batch-out.jsonl"
    given.write_text("\n".join(requests))
    with given.open("rb") as stdin, answers.open("wb") as stdout:
        done = subprocess.run(
            [*LOOPD, "acp"],
            stdin=stdin,
            stdout=stdout,
            stderr=subprocess.PIPE,
            env=home.env(),
            cwd=home.work,
            timeout=60,
            check=False,
        )
    assert done.returncode == 0, done.stderr
    assert b"loopd acp: stdin closed, exiting" in done.stderr
    return [json.loads(line) for line in answers.read_text().splitlines()]


def test_a_file_of_requests_is_served_in_order_and_approvals_are_refused_unasked(
    home: Home,
) -> None:
    """The requests run one after another (the prompt needs the load before it), and
    a client that is a file cannot answer: the edit is refused without asking."""
    (home.work / "a.py").write_text("x = 1\n")
    edit = ScriptedCall("edit", {"path": "a.py", "old_string": "1", "new_string": "2"}, id="e1")
    home.fake.script("*", Reply(tool_calls=(edit,)), Reply(text="done"))
    init = _request(1, "initialize", {"protocolVersion": 1})
    new = {"cwd": str(home.work), "mcpServers": []}
    sid = _answers(_batch(home, init, _request(2, "session/new", new)))[2]["sessionId"]
    load = {"sessionId": sid, "cwd": str(home.work), "mcpServers": []}
    prompt = {"sessionId": sid, "prompt": [{"type": "text", "text": "make x two"}]}
    messages = _batch(
        home, init, _request(2, "session/load", load), _request(3, "session/prompt", prompt)
    )
    answers = _answers(messages)
    assert set(answers) == {1, 2, 3}
    assert answers[3]["stopReason"] == "end_turn"
    assert not [m for m in messages if m.get("method") == "session/request_permission"]
    updates = [m["params"]["update"] for m in messages if m.get("method") == "session/update"]
    assert [u.get("status") for u in updates if u.get("toolCallId") == "e1"][-1] == "failed"
    assert (home.work / "a.py").read_text() == "x = 1\n"


def _answers(messages: list[dict[str, Any]]) -> dict[int, Any]:
    """The results by request id (an error fails the test, naming it)."""
    answers = {m["id"]: m for m in messages if "id" in m and "method" not in m}
    for rid, answer in answers.items():
        assert "result" in answer, (rid, answer)
    return {rid: answer["result"] for rid, answer in answers.items()}


def test_acp_answers_a_file_of_requests_into_a_file_and_exits_at_its_end(home: Home) -> None:
    new = {"cwd": str(home.work), "mcpServers": []}
    answers = _answers(
        _batch(
            home,
            _request(1, "initialize", {"protocolVersion": 1}),
            _request(2, "session/new", new),  # waits for the app to finish starting
            _request(3, "session/list", {}),
        )
    )
    assert set(answers) == {1, 2, 3}
    assert answers[1]["protocolVersion"] == 1
    assert answers[2]["sessionId"]
    assert [s["sessionId"] for s in answers[3]["sessions"]] == [answers[2]["sessionId"]]


@pytest.mark.parametrize("server", ["acp", "lsp"])
def test_dev_null_as_stdin_ends_the_server_at_once(home: Home, server: str) -> None:
    done = subprocess.run(
        [*LOOPD, server],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        env=home.env(),
        cwd=home.work,
        timeout=30,
        check=False,
    )
    assert (done.returncode, done.stdout) == (0, b"")
    assert f"loopd {server}: stdin closed, exiting" in done.stderr.decode()
    assert b"Traceback" not in done.stderr


@pytest.mark.parametrize(("closed", "name"), [(0, "stdin"), (1, "stdout")])
@pytest.mark.parametrize("server", ["acp", "lsp"])
def test_a_closed_descriptor_is_a_message_not_a_traceback(
    home: Home, server: str, closed: int, name: str
) -> None:
    command = " ".join([*LOOPD, server]) + f" {closed}>&-"
    done = subprocess.run(
        ["/bin/sh", "-c", command],
        stdin=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        stdout=subprocess.DEVNULL if closed == 0 else None,
        env=home.env(),
        cwd=home.work,
        timeout=30,
        check=False,
    )
    assert done.returncode == 1
    assert (
        done.stderr.decode().strip()
        == f"loopd: {name} is not open (Bad file descriptor); nothing to serve"
    )


def test_a_regular_file_of_lsp_messages_is_read_to_its_end(home: Home, tmp_path: Path) -> None:
    body = json.dumps(
        {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"capabilities": {}}}
    ).encode()
    requests = tmp_path / "lsp.bin"
    requests.write_bytes(b"Content-Length: %d\r\n\r\n%s" % (len(body), body))
    with requests.open("rb") as stdin:
        done = subprocess.run(
            [*LOOPD, "lsp"],
            stdin=stdin,
            capture_output=True,
            env=home.env(),
            cwd=home.work,
            timeout=30,
            check=False,
        )
    assert done.returncode == 0, done.stderr
    assert b'"id": 1' in done.stdout or b'"id":1' in done.stdout
    assert b"capabilities" in done.stdout
