"""Golden JSON of the vocabulary's own builders: `to_wire` of every event kind, the
verification seal, a mention and a question, each checked against its wire shape."""

from __future__ import annotations

from loopd.protocol.events import (
    AgentMessageChunk,
    AgentThoughtChunk,
    AvailableCommandsUpdated,
    Command,
    ConfigChoice,
    ConfigOption,
    ConfigOptionsChanged,
    DiffContent,
    EmbeddedResourceBlock,
    ImageBlock,
    Location,
    ModeChanged,
    PlanEntry,
    PlanUpdated,
    ResourceLinkBlock,
    SessionInfoUpdated,
    TerminalContent,
    TextBlock,
    ToolCallStarted,
    ToolCallUpdated,
    UsageUpdated,
    UserMessageChunk,
    VerificationUpdated,
)
from loopd.protocol.events_wire import to_wire
from loopd.protocol.mentions import mention_to_wire
from loopd.protocol.questions import Question
from loopd.protocol.verification import CriterionResult, Verification, Watch
from loopd.protocol.wire import shapes, updates
from loopd.protocol.wire.shapes import Mention
from tests.unit.golden import assert_golden

OPTION = ConfigOption(
    "mode",
    "Mode",
    "mode",
    "ask",
    (ConfigChoice("ask", "Ask", "asks first"), ConfigChoice("plan", "Plan")),
)
SEAL = Verification(
    "failed",
    criteria=(
        CriterionResult("tests", "unmet", "1 failed", 1),
        CriterionResult("lint", "met", exit_code=0),
    ),
    protected_writes=("pyproject.toml",),
    cycles=2,
    watch=Watch(12, capped=True),
)
EVENTS = {
    "agent_message_chunk": AgentMessageChunk("Hello", "m1"),
    "agent_message_notice": AgentMessageChunk("retrying", "m2", notice="retry"),
    "agent_thought_chunk": AgentThoughtChunk("thinking", "m3"),
    "user_text": UserMessageChunk(TextBlock("fix it"), "u1"),
    "user_image": UserMessageChunk(ImageBlock("aGk=", "image/png", "file:///a.png"), "u2"),
    "user_link": UserMessageChunk(ResourceLinkBlock("file:///a.py", "a.py"), "u3"),
    "user_resource": UserMessageChunk(
        EmbeddedResourceBlock("file:///b.py", "x = 1", "text/x-python"), "u4"
    ),
    "tool_call": ToolCallStarted(
        "c1",
        "Edit a.py",
        "edit",
        raw_input={"path": "a.py"},
        locations=(Location("/w/a.py", 3),),
        content=(DiffContent("/w/a.py", None, "x"), TextBlock("note")),
    ),
    "tool_call_update": ToolCallUpdated(
        "c1",
        status="completed",
        content=(TerminalContent("t1"),),
        locations=(Location("/w/a.py"),),
        raw_output={"exit": 0},
    ),
    "plan": PlanUpdated((PlanEntry("read", "high", "completed"), PlanEntry("write"))),
    "available_commands_update": AvailableCommandsUpdated(
        (
            Command("done", "Check the definition of done"),
            Command("explore", "Look around", "a question"),
        )
    ),
    "current_mode_update": ModeChanged("plan"),
    "config_option_update": ConfigOptionsChanged((OPTION,)),
    "session_info_update": SessionInfoUpdated("A title", "2026-01-01T00:00:00Z"),
    "usage_update": UsageUpdated(100, 1000),
    "usage_update_cost": UsageUpdated(100, 1000, 0.25),
    "verification": VerificationUpdated(SEAL),
}


def test_every_event_kind_renders_its_golden_session_update() -> None:
    cases = {name: (to_wire(event), updates.SessionUpdate) for name, event in EVENTS.items()}
    assert_golden(__file__, "session_updates", cases)


def test_the_seal_mentions_and_questions_render_their_golden_json() -> None:
    mention = Mention(
        server="docs",
        uri="mcp://docs/a",
        name="a",
        title="A",
        description="the first",
        mime_type="text/plain",
    )
    question = Question("s1", "c1", "Which one?", ("a", "b"), allow_text=True)
    assert_golden(
        __file__,
        "vocabulary",
        {
            "verification": (SEAL.to_wire(), updates.Verification),
            "clean_seal": (Verification("clean").to_wire(), updates.Verification),
            "mention": (mention_to_wire(mention), shapes.Mention),
            "mention_bare": (
                mention_to_wire(Mention(server="docs", uri="mcp://docs/b", name="b")),
                shapes.Mention,
            ),
            "ask_user": (question.to_wire(), shapes.AskUserParams),
        },
    )
