"""Skills: found in three places (first name wins), indexed by front matter, frozen
per session, and loaded by the `skill` tool from the index only."""

from __future__ import annotations

from pathlib import Path

import pytest
from tooltest import RecordingProgress

from loopd.engine.ports import ToolCall
from loopd.protocol.errors import ToolInputError
from loopd.runtimes.base import RuntimeContext
from loopd.testing.fakes import RecordingEmitter, ScriptedApprover
from loopd.tools.env import ToolEnv
from loopd.tools.registry import ToolRegistry
from loopd.tools.skills import Skill, SkillShelf, find_skills, split_front_matter


def skill(base: Path, folder: str, front: str, body: str = "Do the thing.") -> Path:
    path = base / folder / "SKILL.md"
    path.parent.mkdir(parents=True)
    path.write_text(f"---\n{front}\n---\n\n{body}\n")
    return path


@pytest.fixture
def places(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    ws = tmp_path / "ws"
    ws.mkdir()
    env = {"HOME": str(tmp_path / "home"), "XDG_CONFIG_HOME": str(tmp_path / "xdg")}
    skill(ws / ".loopd" / "skills", "release", "name: release\ndescription: Cut a release")
    skill(tmp_path / "xdg" / "loopd" / "skills", "release", "name: release\ndescription: user's")
    skill(
        tmp_path / "xdg" / "loopd" / "skills", "review", 'name: review\ndescription: "Review a PR"'
    )
    skill(ws / ".claude" / "skills", "db", "description: Migrate the database\nname: migrate")
    skill(ws / ".claude" / "skills", "empty", "name: empty")  # no description: not indexed
    return ws, env


def test_found_in_order_first_name_wins(places: tuple[Path, dict[str, str]]) -> None:
    ws, env = places
    book = find_skills(str(ws), env)
    assert [(s.name, s.description) for s in book.skills] == [
        ("release", "Cut a release"),
        ("review", "Review a PR"),
        ("migrate", "Migrate the database"),
    ]
    assert book.index().splitlines()[1:] == [
        "- release: Cut a release",
        "- review: Review a PR",
        "- migrate: Migrate the database",
    ]
    assert book.indexed("PROMPT").startswith("PROMPT\n\nSkills:")
    assert find_skills(str(ws / "nowhere"), {"HOME": str(ws)}).indexed("PROMPT") == "PROMPT"


def test_front_matter_needs_its_fences() -> None:
    assert split_front_matter("---\nname: a\n---\nbody") == ({"name": "a"}, "body")
    assert split_front_matter("no front matter") == ({}, "no front matter")
    assert split_front_matter("---\nname: a\nbody") == ({}, "---\nname: a\nbody")


def test_the_index_is_frozen_for_the_session(places: tuple[Path, dict[str, str]]) -> None:
    ws, env = places
    shelf = SkillShelf(env)
    ctx = RuntimeContext("s1", str(ws), (), RecordingEmitter(), ScriptedApprover(), {})
    before = shelf.book(ctx)
    skill(ws / ".loopd" / "skills", "late", "name: late\ndescription: added mid-session")
    assert shelf.book(ctx) is before
    shelf.forget("s1")
    assert shelf.book(ctx).get("late") is not None  # a new session sees it


async def test_the_skill_tool_loads_a_body_from_the_index_only(
    places: tuple[Path, dict[str, str]],
) -> None:
    ws, env = places
    tool_env = ToolEnv(roots=(str(ws),))
    registry = ToolRegistry(tool_env, [Skill(find_skills(str(ws), env))])
    assert [s.name for s in registry.specs()] == ["skill"]
    call = ToolCall("k1", "skill", {"name": "migrate"})
    declaration = await registry.declare(call)
    assert declaration.title == "Load skill migrate" and declaration.kind == "think"
    result = await registry.run(call, RecordingProgress())
    assert result.output.startswith("# Skill: migrate\n(files of this skill are in ")
    assert result.output.endswith("Do the thing.") and "---" not in result.output
    with pytest.raises(ToolInputError, match="the skills are: release, review, migrate"):
        await registry.declare(ToolCall("k2", "skill", {"name": "../../etc/passwd"}))
    nothing = find_skills(str(ws / "x"), {"HOME": str(ws / "x")})
    assert ToolRegistry(tool_env, [Skill(nothing)]).specs() == []
