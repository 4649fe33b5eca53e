"""A command the person typed (`!cmd`): run through the bash tool, outside any turn.

`!` skips the model, not the boundary: the call is the model's kind of call, and
`run_typed` gives the one message the history keeps of it. The engine
(`loopd.engine.loop.Engine.exec`) appends it.
"""

from __future__ import annotations

import asyncio

from loopd.engine.history import exec_message
from loopd.engine.limits import truncate_result
from loopd.engine.ports import ToolCall, ToolResult
from loopd.engine.toolrun import ToolPhase
from loopd.protocol.messages import Message, TextPart
from loopd.protocol.turns import StopReason

EXEC_TOOL = "bash"
"""The tool a command typed by the person runs through: through the tool and its
policy and sandbox, never around them. `!` skips the model, not the boundary."""


async def run_typed(
    phase: ToolPhase, call_id: str, command: str, max_result_bytes: int
) -> tuple[Message, StopReason]:
    """Run a command the PERSON typed (`!cmd`) in `phase`, outside any model turn;
    the message for the history and how the run ended.

    The call goes through `EXEC_TOOL` exactly as the model's would: declared,
    decided by the policy, asked when it crosses the boundary, run in the sandbox.
    The screen gets the tool events it already draws. The history gets ONE user
    message holding the command and its output, because the person ran it and
    the next turn must know what they saw; a user message, not a tool result,
    because no provider accepts a result without a call, and inventing a call the
    model never made would put words in its mouth."""
    call = ToolCall(call_id, EXEC_TOOL, {"command": command})
    reason: StopReason = "end_turn"
    try:
        result = await phase.run_alone(call)
    except asyncio.CancelledError:
        task = asyncio.current_task()
        if task is not None:
            task.uncancel()
        result, reason = ToolResult("Cancelled by the user.", is_error=True), "cancelled"
    output = truncate_result(result.output, max_result_bytes)
    return Message("user", (TextPart(exec_message(command, output)),)), reason
