"""`ask_user` through the ACP SDK: a form elicitation for a client that advertises
forms, a permission request whose options are the choices for any other."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from acp.schema import (
    AcceptElicitationResponse,
    AllowedOutcome,
    ClientCapabilities,
    ElicitationCapabilities,
    ElicitationFormCapabilities,
    PermissionOption,
    RequestPermissionResponse,
    ToolCallUpdate,
)

from loopd.runtimes.base import RuntimeContext
from loopd.testing.fakes import Reply, ScriptedProvider
from loopd.testing.harness import scripted_manager
from loopd.tools.ask_user import AskUser
from loopd.tools.env import ToolEnv
from loopd.tools.registry import ToolRegistry
from tests.unit.acp.conftest import RecordingClient, connected, text

FORMS = ClientCapabilities(elicitation=ElicitationCapabilities(form=ElicitationFormCapabilities()))


@dataclass
class AnsweringClient(RecordingClient):
    """Picks the permission option named `pick`; fills forms with `form`."""

    pick: str = ""
    form: dict[str, Any] = field(default_factory=dict)
    forms: list[Any] = field(default_factory=list)

    async def request_permission(
        self, session_id: str, tool_call: ToolCallUpdate, options: list[PermissionOption], **kw: Any
    ) -> RequestPermissionResponse:
        self.permissions.append((tool_call, options))
        chosen = next(o for o in options if o.name == self.pick)
        return RequestPermissionResponse(
            outcome=AllowedOutcome(outcome="selected", option_id=chosen.option_id)
        )

    async def create_elicitation(self, message: str, mode: Any, **kw: Any) -> Any:
        self.forms.append((message, mode))
        return AcceptElicitationResponse(action="accept", content=self.form)


def manager_asking(tmp_path: Path, question: dict[str, Any]):  # type: ignore[no-untyped-def]
    provider = ScriptedProvider.of(
        Reply(tools=[("q1", "ask_user", question)]), Reply(text="thanks")
    )

    def tools_for(ctx: RuntimeContext) -> ToolRegistry:
        env = ToolEnv(roots=(str(tmp_path),), person=ctx.person, session_id=ctx.session_id)
        return ToolRegistry(env, [AskUser()])

    return scripted_manager(tmp_path, provider, tools_for=tools_for), provider


QUESTION = {"question": "Which database?", "choices": ["sqlite", "postgres"]}


async def test_without_forms_the_choices_are_permission_options(tmp_path: Path) -> None:
    manager, provider = manager_asking(tmp_path, QUESTION)
    client = AnsweringClient(pick="postgres")
    async with connected(manager, client) as s:
        new = await s.conn.new_session(cwd=str(tmp_path), mcp_servers=[])
        result = await s.conn.prompt(session_id=new.session_id, prompt=text("set it up"))
    assert result.stop_reason == "end_turn"
    call, options = client.permissions[0]
    assert call.tool_call_id == "q1" and call.title == "Which database?"
    assert [o.name for o in options] == ["sqlite", "postgres"]
    assert [spec.name for spec in provider.requests[0].tools] == ["ask_user"]
    answer = provider.requests[1].messages[-1].tool_results[0]
    assert answer.content == "The user answered: postgres" and not answer.is_error


async def test_a_client_with_forms_gets_an_elicitation_with_free_text(tmp_path: Path) -> None:
    manager, provider = manager_asking(tmp_path, {**QUESTION, "allow_text": True})
    client = AnsweringClient(form={"choice": "sqlite", "text": "duckdb, actually"})
    async with connected(manager, client, FORMS, unstable=True) as s:
        new = await s.conn.new_session(cwd=str(tmp_path), mcp_servers=[])
        await s.conn.prompt(session_id=new.session_id, prompt=text("set it up"))
    assert client.permissions == []
    message, mode = client.forms[0]
    assert message == "Which database?"
    assert mode.tool_call_id == "q1" and mode.session_id == new.session_id
    schema = mode.requested_schema.model_dump(by_alias=True, exclude_none=True)
    assert [o["const"] for o in schema["properties"]["choice"]["oneOf"]] == ["sqlite", "postgres"]
    assert schema["properties"]["text"]["type"] == "string"
    answer = provider.requests[1].messages[-1].tool_results[0]
    assert answer.content == "The user answered: duckdb, actually"
