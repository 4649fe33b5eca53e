"""Skills: found in three places (first name wins), indexed by front matter, frozen
per session, and loaded by the `skill` tool from the index only."""

from __future__ import annotations

import os
import tracemalloc
from pathlib import Path

import pytest
from tests.unit.fifos import released
from tooltest import RecordingProgress

from loopd.engine.ports import ToolCall
from loopd.policy.reading import DiskReader
from loopd.protocol.errors import ToolInputError
from loopd.runtimes.base import RuntimeContext
from loopd.testing.fakes import RecordingEmitter, ScriptedApprover
from loopd.tools.env import ToolEnv
from loopd.tools.registry import ToolRegistry
from loopd.tools.skills import (
    MAX_NAME,
    MAX_SKILLS,
    Skill,
    SkillShelf,
    find_skills,
    split_front_matter,
)


def rules(env: dict[str, str]) -> DiskReader:
    """The app's reading rules for `env`: its home, loopd's config folder secret."""
    return DiskReader(
        (), home=env.get("HOME", ""), secrets=(f"{env.get('XDG_CONFIG_HOME')}/loopd",)
    )


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
    book = find_skills(str(ws), env, rules(env))
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
    nowhere = find_skills(str(ws / "nowhere"), {"HOME": str(ws)}, rules(env))
    assert nowhere.indexed("PROMPT") == "PROMPT"


def test_front_matter_needs_its_fences() -> None:
    assert split_front_matter("---\nname: a\n---\nbody") == ({"name": "a"}, "body")
    assert split_front_matter("no front matter") == ({}, "no front matter")
    assert split_front_matter("---\nname: a\nbody") == ({}, "---\nname: a\nbody")


def test_a_repository_s_front_matter_costs_the_prompt_a_bounded_line(tmp_path: Path) -> None:
    """Not named in the issue: the front matter parser. A skill's name was taken
    whole: 100 skills with names of 60,000 characters put 6 MB into every session's
    prompt (descriptions were already cut)."""
    ws, env = tmp_path / "ws", {"HOME": str(tmp_path / "home")}
    for n in range(MAX_SKILLS):
        skill(ws / ".loopd" / "skills", f"s{n}", f"name: {n}{'n' * 60_000}\ndescription: d")
    book = find_skills(str(ws), env, rules(env))
    assert len(book.skills) == MAX_SKILLS
    assert all(len(s.name) == MAX_NAME for s in book.skills)
    assert len(book.index()) < MAX_SKILLS * (MAX_NAME + 10) + 200


def test_the_index_is_frozen_for_the_session(places: tuple[Path, dict[str, str]]) -> None:
    ws, env = places
    shelf = SkillShelf(env, rules(env))
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
    registry = ToolRegistry(tool_env, [Skill(find_skills(str(ws), env, rules(env)))])
    assert [s.name for s in registry.specs()] == ["skill"]
    call = ToolCall("k1", "skill", {"name": "migrate"})
    declaration = await registry.declare(call)
    assert declaration.title == "Load skill migrate" and declaration.kind == "think"
    result = await registry.run(call, RecordingProgress())
    assert result.output.startswith("# Skill: migrate\n(files of this skill are in ")
    assert result.output.endswith("Do the thing.") and "---" not in result.output
    with pytest.raises(ToolInputError, match="the skills are: release, review, migrate"):
        await registry.declare(ToolCall("k2", "skill", {"name": "../../etc/passwd"}))
    nothing = find_skills(str(ws / "x"), {"HOME": str(ws / "x")}, rules(env))
    assert ToolRegistry(tool_env, [Skill(nothing)]).specs() == []


async def load(book_of: object, name: str) -> tuple[bool, str]:
    """The `skill` tool's answer for `name`: (is an error, output)."""
    assert isinstance(book_of, Skill)
    env = ToolEnv(roots=("/",))
    result = await ToolRegistry(env, [book_of]).run(
        ToolCall("k1", "skill", {"name": name}), RecordingProgress()
    )
    return result.is_error, result.output


async def test_a_skill_swapped_for_a_link_to_a_key_is_refused_at_load(
    places: tuple[Path, dict[str, str]], tmp_path: Path
) -> None:
    ws, env = places
    key = tmp_path / "home" / ".ssh" / "id_rsa"
    key.parent.mkdir(parents=True)
    key.write_text("-----BEGIN PRIVATE KEY-----")
    tool = Skill(find_skills(str(ws), env, rules(env)))
    path = ws / ".loopd" / "skills" / "release" / "SKILL.md"
    path.unlink()
    path.symlink_to(key)
    failed, output = await load(tool, "release")
    assert failed and "leads outside" in output and "PRIVATE KEY" not in output


async def test_a_fifo_as_a_skill_neither_blocks_the_index_nor_a_load(
    places: tuple[Path, dict[str, str]],
) -> None:
    ws, env = places
    planted = ws / ".loopd" / "skills" / "planted" / "SKILL.md"
    planted.parent.mkdir()
    os.mkfifo(planted)
    loaded = ws / ".claude" / "skills" / "db" / "SKILL.md"
    with released(planted, loaded) as blocked:
        tool = Skill(find_skills(str(ws), env, rules(env)))
        assert tool.book.get("planted") is None
        loaded.unlink()
        os.mkfifo(loaded)
        failed, output = await load(tool, "migrate")
    assert blocked == []
    assert failed and "named pipe (FIFO)" in output


async def test_a_huge_skill_costs_its_bound_at_open_and_at_load(
    places: tuple[Path, dict[str, str]],
) -> None:
    ws, env = places
    huge = skill(ws / ".loopd" / "skills", "huge", "name: huge\ndescription: Big")
    with huge.open("r+b") as f:
        f.truncate(150 * 1024 * 1024)  # sparse: 150 MB of NULs after the body
    tracemalloc.start()
    try:
        tool = Skill(find_skills(str(ws), env, rules(env)))
        failed, output = await load(tool, "huge")
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert not failed and output.endswith("[... truncated ...]")
    assert peak < 8 * 1024 * 1024  # the bounds (64 KiB, 200 KB), not 150 MB twice


async def test_the_persons_own_skills_may_link_anywhere_but_to_a_secret(
    places: tuple[Path, dict[str, str]], tmp_path: Path
) -> None:
    ws, env = places
    store = tmp_path / "nix" / "store"  # home-manager links a skill from its store
    store.mkdir(parents=True)
    (store / "SKILL.md").write_text("---\nname: nix\ndescription: From the store\n---\nNix.")
    own = tmp_path / "xdg" / "loopd"
    (own / "skills" / "nix").mkdir()
    (own / "skills" / "nix" / "SKILL.md").symlink_to(store / "SKILL.md")
    (own / "config.toml").write_text("---\nname: cfg\ndescription: loopd's config\n---\n")
    (own / "skills" / "cfg").mkdir()
    (own / "skills" / "cfg" / "SKILL.md").symlink_to(own / "config.toml")
    tool = Skill(find_skills(str(ws), env, rules(env)))
    assert tool.book.get("nix") is not None and tool.book.get("cfg") is None
    assert await load(tool, "nix") == (
        False,
        f"# Skill: nix\n(files of this skill are in {own / 'skills' / 'nix'})\n\nNix.",
    )
