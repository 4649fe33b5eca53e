from pathlib import Path
from typing import Any

import pytest
from tooltest import RecordingProgress

from loopd.engine.ports import Declaration, ToolCall, ToolProgress, ToolResult
from loopd.protocol.errors import ToolInputError
from loopd.protocol.model import INVALID_JSON_KEY
from loopd.tools import ToolEnv, ToolRegistry
from loopd.tools.base import Args


def test_specs_offer_every_core_tool_with_a_closed_object_schema(tools: ToolRegistry) -> None:
    specs = tools.specs()
    assert [s.name for s in specs] == ["read", "write", "edit", "bash", "glob", "grep", "plan"]
    for spec in specs:
        assert spec.description
        assert spec.input_schema["type"] == "object"
        assert spec.input_schema["additionalProperties"] is False


@pytest.mark.parametrize(
    ("name", "args", "message"),
    [
        ("read", {}, "missing required argument `path`"),
        ("read", {"path": "a", "lines": 3}, "unexpected argument `lines`"),
        ("read", {"path": 7}, "`path` must be a string"),
        ("edit", {"path": "a", "old_string": "x"}, "missing required argument `new_string`"),
        ("bash", {"command": "ls", "timeout": "10"}, "`timeout` must be a number"),
        ("bash", {"command": "ls", "timeout": 601}, "at most 600 seconds"),
        ("glob", {"pattern": "/etc/*"}, "`pattern` must be relative"),
        ("grep", {"pattern": "x", "case_insensitive": 1}, "must be a boolean"),
        ("plan", {"entries": [{"content": "a"}]}, "`entries[0].status`"),
        ("nope", {}, "there is no tool named 'nope'; the tools are: read, write"),
        ("read", {INVALID_JSON_KEY: '{"path": "a'}, "not valid JSON"),
    ],
)
async def test_bad_arguments_fail_declare_and_become_error_results_in_run(
    tools: ToolRegistry, name: str, args: dict[str, Any], message: str
) -> None:
    call = ToolCall("c1", name, args)
    with pytest.raises(ToolInputError, match=message.replace("(", r"\(").replace("[", r"\[")):
        await tools.declare(call)
    result = await tools.run(call, RecordingProgress())
    assert result.is_error
    assert message in result.output


class Exploding:
    name = "explode"
    kind = "other"
    description = "fails"
    input_schema: dict[str, Any] = {"type": "object", "properties": {}}  # noqa: RUF012

    async def declare(self, args: Args, env: ToolEnv) -> Declaration:
        return Declaration(title="Explode", kind="other")

    async def run(self, args: Args, env: ToolEnv, progress: ToolProgress) -> ToolResult:
        raise KeyError("boom")


async def test_an_unexpected_exception_becomes_an_error_result(env: ToolEnv) -> None:
    tools = ToolRegistry(env, [Exploding()])
    result = await tools.run(ToolCall("c1", "explode", {}), RecordingProgress())
    assert result.is_error
    assert "The explode tool failed unexpectedly: KeyError" in result.output


async def test_os_errors_become_error_results_naming_the_file(
    tools: ToolRegistry, tmp_path: Path
) -> None:
    (tmp_path / "locked").mkdir()
    result = await tools.run(
        ToolCall("c1", "write", {"path": "locked", "content": "x"}), RecordingProgress()
    )
    assert result.is_error
    assert "locked is a directory" in result.output


def test_two_tools_with_one_name_are_refused(env: ToolEnv) -> None:
    with pytest.raises(ValueError, match="share a name"):
        ToolRegistry(env, [Exploding(), Exploding()])
