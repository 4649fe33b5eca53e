"""`ask_user` through the real `loopd lsp` (the shipped app, its real ask_user tool,
the fake model): the `loopd/session/askUser` extension request for a client that
opted in, `window/showMessageRequest` with the choices for a plain one."""

from __future__ import annotations

import json

import pytest

from loopd.testing.llm_script import Reply, ScriptedCall
from tests.e2e.acp.conftest import Home, home
from tests.e2e.conftest import LOOPD
from tests.e2e.lsp.conftest import Start, start, until

__all__ = ["home", "start"]

pytestmark = pytest.mark.e2e

ASK = {"question": "Which database?", "choices": ["sqlite", "postgres"], "allow_text": True}


def script(home: Home) -> None:
    home.fake.script("*", Reply(tool_calls=(ScriptedCall("ask_user", ASK),)), Reply(text="Noted."))


def answer_the_model_got(home: Home) -> str:
    return json.dumps(home.fake.requests[1].body["messages"][-1])


async def test_the_extension_asks_with_choices_and_free_text(start: Start, home: Home) -> None:
    script(home)
    editor = await start({}, server=([*LOOPD, "lsp"], home.env()))
    editor.answers.append("duckdb")
    sid = await editor.new_session()
    done = await editor.request(
        "loopd/session/prompt", {"sessionId": sid, "prompt": [{"type": "text", "text": "go"}]}
    )
    assert done["stopReason"] == "end_turn"
    [asked] = editor.user_questions
    assert asked["question"] == "Which database?" and asked["sessionId"] == sid
    assert asked["choices"] == ["sqlite", "postgres"] and asked["allowText"] is True
    assert "The user answered: duckdb" in answer_the_model_got(home)
    assert "ask_user" in [t["name"] for t in home.fake.requests[0].body["tools"]]


async def test_a_plain_client_gets_a_dialog_with_the_choices(start: Start, home: Home) -> None:
    script(home)
    editor = await start({}, profile="plain", server=([*LOOPD, "lsp"], home.env()))
    editor.answers.append("postgres")
    await editor.command("loopd.ask", {"prompt": "go"})
    await until(lambda: len(home.fake.requests) >= 2, within=30)
    [dialog] = editor.dialogs
    assert dialog.message == "loopd asks: Which database?"
    assert [a.title for a in dialog.actions or []] == ["sqlite", "postgres"]
    assert "The user answered: postgres" in answer_the_model_got(home)
