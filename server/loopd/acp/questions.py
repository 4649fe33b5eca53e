"""The agent's questions (`ask_user`) to an ACP client.

A client that advertises form elicitation (`clientCapabilities.elicitation.form`)
gets `elicitation/create`: a form with the choices as a select and, when free text is
allowed, a text field. Any other client gets `session/request_permission` on the
`ask_user` call, whose options are the choices: every ACP client can show that, but
it cannot take free text, so a question that offers no choices goes unanswered there.
"""

from __future__ import annotations

from acp.interfaces import Client
from acp.schema import (
    AcceptElicitationResponse,
    AllowedOutcome,
    ElicitationFormSessionMode,
    ElicitationSchema,
    ElicitationStringPropertySchema,
    EnumOption,
    PermissionOption,
    ToolCallUpdate,
)

from loopd.protocol.questions import Question

CHOICE, TEXT = "choice", "text"


async def elicit(client: Client, question: Question) -> str | None:
    properties: dict[str, ElicitationStringPropertySchema] = {}
    if question.choices:
        options = [EnumOption(const=c, title=c) for c in question.choices]
        properties[CHOICE] = ElicitationStringPropertySchema(
            type="string", title="Answer", one_of=options
        )
    if question.allow_text:
        title = "Or in your own words" if question.choices else "Answer"
        properties[TEXT] = ElicitationStringPropertySchema(type="string", title=title)
    schema = ElicitationSchema(
        type="object",
        properties=dict(properties),
        required=[] if question.allow_text else [CHOICE],
    )
    mode = ElicitationFormSessionMode(
        session_id=question.session_id,
        tool_call_id=question.tool_call_id or None,
        requested_schema=schema,
    )
    response = await client.create_elicitation(message=question.question, mode=mode)
    if not isinstance(response, AcceptElicitationResponse) or not response.content:
        return None
    text, choice = response.content.get(TEXT), response.content.get(CHOICE)
    if isinstance(text, str) and text.strip():
        return text
    return choice if isinstance(choice, str) else None


async def ask_by_permission(client: Client, question: Question) -> str | None:
    if not question.choices:
        return None  # nothing a permission dialog can offer
    options = [
        PermissionOption(option_id=f"choice_{i}", name=choice, kind="allow_once")
        for i, choice in enumerate(question.choices)
    ]
    call = ToolCallUpdate(
        tool_call_id=question.tool_call_id,
        title=question.question,
        kind="think",
        status="pending",
        raw_input={"question": question.question, "choices": list(question.choices)},
    )
    response = await client.request_permission(
        session_id=question.session_id, tool_call=call, options=options
    )
    match response.outcome:
        case AllowedOutcome(option_id=option_id):
            by_id = {o.option_id: o.name for o in options}
            return by_id.get(option_id)
    return None
