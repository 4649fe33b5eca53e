"""The ceilings on one turn, the repeat detector, and the tool-result size cap."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from loopd.engine.guard import LoopGuardOptions
from loopd.engine.ports import ToolCall
from loopd.protocol.events import TextBlock, ToolContent


@dataclass(frozen=True, slots=True)
class Limits:
    """What bounds one turn.

    The ceilings are deliberately redundant: defence in depth. `max_identical_calls`
    is the real mechanism, because a pathological loop shows up in three repeats long
    before any sane iteration cap; `max_iterations` and `max_tool_calls` are the
    backstop. If you find yourself lowering `max_iterations` to control cost, the real
    problem is usually the repeat detector switched off or a tool returning
    uninformative errors.

    `max_turn_tokens` is a hard cost ceiling, and 0 (unlimited) is the default:
    cutting a turn off mid-way leaves the workspace half-edited, which is worse than
    the state it started in, and the iteration cap already bounds spend.

    `max_parallel` caps one scheduled group; `max_result_bytes` caps what one tool
    result costs the context (see `truncate_result`). `max_shown_chars` is what a
    tool aims to show the person of one output; no text a call shows (live or at
    the end) passes twice that, whatever the tool (an MCP server's, say) returned,
    because every update is journaled and sent to every editor (`bound_shown`).

    `max_turn_cost_usd` is the loop guard's cost budget, charged per model request
    where the model's price is known: one warning at 80%, a stop past it. Every
    request made for the turn counts, as it does for `max_turn_tokens`: its steps',
    compaction's summaries and its explore children's (`loopd.engine.spend`).

    Zero turns a check off: `max_iterations`, `max_tool_calls`, `max_result_bytes`,
    `max_turn_tokens`, `max_turn_cost_usd` and `max_identical_calls`; every other
    value is a bound, lower is tighter (one identical call is not a repeat, so 1 acts
    as 2). `max_parallel` is at least 1 whatever it says.
    """

    max_iterations: int = 25
    max_tool_calls: int = 100
    max_parallel: int = 8
    max_result_bytes: int = 64_000
    max_identical_calls: int = 3
    max_turn_tokens: int = 0
    max_turn_cost_usd: float = 0.0
    max_shown_chars: int = 64_000


def guard_options(limits: Limits) -> LoopGuardOptions:
    """The loop guard for a turn under `limits`: the repeat cap is the configured
    `max_identical_calls`, the action budget `max_tool_calls` and the cost budget
    `max_turn_cost_usd`, so the guard warns once at 80% of a budget and then stops;
    a limit set to 0 is off."""
    identical = limits.max_identical_calls
    return LoopGuardOptions(
        repeat_cap=max(2, identical) if identical else None,
        max_actions=limits.max_tool_calls or None,
        max_cost_usd=limits.max_turn_cost_usd or None,
    )


def canonical_input(value: Mapping[str, Any]) -> str:
    """`value` as stable JSON: sorted keys, no whitespace, nested mappings included.

    Two inputs that differ only in key order or formatting are the same request, and
    the repeat detector must see them as the same call.
    """
    return json.dumps(
        value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=_as_dict
    )


def call_key(call: ToolCall) -> str:
    """The identity of a call for repeat detection: tool name and canonical input.

    The call id is left out on purpose: every call gets a fresh one, so including it
    would make every call unique. Encoded as one JSON array so no tool name can be
    confused with part of an input.
    """
    return canonical_input({"tool": call.name, "input": call.input})


def truncate_result(text: str, max_bytes: int) -> str:
    """`text` cut to at most `max_bytes` of UTF-8, keeping its head and its tail.

    Both ends, because that is where the signal usually is: a command's first lines
    say what ran and its last lines say how it ended. The middle is replaced by a
    notice stating exactly how many bytes were cut, so the model knows the result is
    partial rather than reasoning about output it never saw. Cuts fall on character
    boundaries, so the result is always valid text.

    Text that fits is returned unchanged, and so is everything when `max_bytes` is 0
    (the cap is off). A cap too small to hold even the notice gets the notice
    alone: a few bytes over is better than a silent cut.
    """
    if max_bytes == 0:
        return text
    data = text.encode()
    total = len(data)
    if total <= max_bytes:
        return text
    # The notice's own length depends on the count it reports; size it for the
    # largest possible count so the kept text plus the real notice always fits.
    budget = max(0, max_bytes - len(_notice(total, total).encode()))
    head = data[: budget // 2].decode(errors="ignore")
    tail_size = budget - budget // 2
    tail = data[total - tail_size :].decode(errors="ignore") if tail_size else ""
    cut = total - len(head.encode()) - len(tail.encode())
    return head + _notice(cut, total) + tail


def bound_shown(content: tuple[ToolContent, ...], max_chars: int) -> tuple[ToolContent, ...]:
    """`content` with every text block over `2 * max_chars` characters cut to its
    head and tail (the backstop behind each tool's own, smaller cap)."""
    limit = 2 * max_chars
    if all(not isinstance(c, TextBlock) or len(c.text) <= limit for c in content):
        return content
    return tuple(
        TextBlock(_head_and_tail(c.text, limit))
        if isinstance(c, TextBlock) and len(c.text) > limit
        else c
        for c in content
    )


def _head_and_tail(text: str, limit: int) -> str:
    half = limit // 2
    cut = len(text) - 2 * half
    return f"{text[:half]}\n[... {cut} characters cut from the middle ...]\n{text[-half:]}"


def _notice(cut: int, total: int) -> str:
    return f"\n[... {cut} of {total} bytes cut from the middle of this result ...]\n"


def _as_dict(value: object) -> dict[str, Any]:
    """JSON fallback: a mapping that is not a dict still serialises as an object."""
    if isinstance(value, Mapping):
        return dict(value)
    raise TypeError(f"tool input is not JSON: {type(value).__name__}")
