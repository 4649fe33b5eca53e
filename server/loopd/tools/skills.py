"""Skills: folders holding a `SKILL.md` (front matter `name` and `description`, then
the instructions), indexed in the system prompt and loaded when the model uses one.

Where they are found, first name wins:

    <workspace>/.loopd/skills/<skill>/SKILL.md
    $XDG_CONFIG_HOME/loopd/skills/<skill>/SKILL.md      (default ~/.config)
    <workspace>/.claude/skills/<skill>/SKILL.md          (compatibility)

Only the index (name and description, one line each) goes into the prompt: the
bodies can be long, and most turns need none of them. The index is found once, when
the session opens, and frozen like the instructions: a skill added mid-session must
not rewrite the prefix every request shares. The `skill` tool loads a body from that
frozen index and nothing else, so it reads no path the model chooses.

Every SKILL.md is read through the session's `FileReader`, at the index and again
when loaded: a workspace's skill never through a link out of the workspace, the
person's own (in loopd's config folder) through links anywhere but to a secret;
never a FIFO or device, and bounded (the index reads the front matter's
`MAX_INDEX_BYTES`, a load `MAX_BODY_BYTES`), so a huge or planted file costs nothing.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, Protocol

from loopd.engine.ports import Declaration, ToolProgress, ToolResult
from loopd.home import home_path
from loopd.protocol.errors import ToolInputError
from loopd.protocol.events import TextBlock, ToolKind
from loopd.protocol.reading import FileReader, ReadRefused
from loopd.tools.base import Args, failure
from loopd.tools.env import ToolEnv
from loopd.tools.schema import arguments, text

SKILL_FILE = "SKILL.md"
MAX_SKILLS = 100
MAX_NAME = 64  # as Claude Code's skills: a name, not a text in the prompt
MAX_DESCRIPTION = 300
MAX_BODY_CHARS = 50_000
MAX_INDEX_BYTES = 64 * 1024
MAX_BODY_BYTES = 4 * MAX_BODY_CHARS + 4  # the characters kept, in any encoding


@dataclass(frozen=True, slots=True)
class SkillInfo:
    """One indexed skill: `path` is its SKILL.md, read again with `reader`."""

    name: str
    description: str
    path: str
    reader: FileReader = field(repr=False, compare=False)


@dataclass(frozen=True, slots=True)
class SkillBook:
    """A session's skills, as found when it opened."""

    skills: tuple[SkillInfo, ...] = ()

    def get(self, name: str) -> SkillInfo | None:
        return next((s for s in self.skills if s.name == name), None)

    def indexed(self, prompt: str) -> str:
        """`prompt` with the index appended (unchanged without skills)."""
        index = self.index()
        return f"{prompt}\n\n{index}" if index else prompt

    def index(self) -> str:
        """The system prompt's section, or "" without skills."""
        if not self.skills:
            return ""
        lines = [
            "Skills: instructions for particular tasks, loaded with the `skill` tool when "
            "one applies to what you are doing (load it before you start that work):"
        ]
        lines += [f"- {s.name}: {s.description}" for s in self.skills]
        return "\n".join(lines)


def skill_dirs(cwd: str, env: Mapping[str, str]) -> tuple[Path, ...]:
    return (
        Path(cwd) / ".loopd" / "skills",
        _user_skills(env),
        Path(cwd) / ".claude" / "skills",
    )


def _user_skills(env: Mapping[str, str]) -> Path:
    home = Path(home_path(env))
    config = Path(env["XDG_CONFIG_HOME"]) if env.get("XDG_CONFIG_HOME") else home / ".config"
    return config / "loopd" / "skills"


def find_skills(cwd: str, env: Mapping[str, str], reader: FileReader) -> SkillBook:
    """The skills seen from `cwd`, first name wins. A workspace's are read beneath
    `cwd`; the person's own beneath `/`, their folder spared from the rule that
    loopd's config folder is secret (its files named like secrets are not)."""
    user = _user_skills(env)
    own, workspace = reader.within(("/",), spared=(str(user),)), reader.within((cwd,))
    found: dict[str, SkillInfo] = {}
    for base in skill_dirs(cwd, env):
        beneath = own if base == user else workspace
        try:
            folders = sorted(p for p in base.iterdir() if p.is_dir())
        except OSError:
            continue
        for folder in folders:
            info = _read_info(str(folder / SKILL_FILE), beneath)
            if info is not None and info.name not in found and len(found) < MAX_SKILLS:
                found[info.name] = info
    return SkillBook(tuple(found.values()))


def _read_info(path: str, reader: FileReader) -> SkillInfo | None:
    read = reader.read(path, max_bytes=MAX_INDEX_BYTES, over="cut")
    if isinstance(read, ReadRefused):
        return None
    meta, _ = split_front_matter(read.text())
    # Both are cut: a repository's front matter goes into every session's prompt.
    given = " ".join(meta.get("name", "").split())[:MAX_NAME]
    name = given or os.path.basename(os.path.dirname(path))[:MAX_NAME]
    description = " ".join(meta.get("description", "").split())[:MAX_DESCRIPTION]
    if not description:
        return None  # an index line with no description helps no one choose it
    return SkillInfo(name, description, path, reader)


def split_front_matter(text: str) -> tuple[dict[str, str], str]:
    """`key: value` lines between `---` fences, and the body after them. Values may
    be quoted; anything fancier than one line per key is not read."""
    lines = text.splitlines()
    if not lines or lines[0].strip() != "---":
        return {}, text
    meta: dict[str, str] = {}
    for i, line in enumerate(lines[1:], start=1):
        if line.strip() == "---":
            return meta, "\n".join(lines[i + 1 :]).lstrip("\n")
        key, sep, value = line.partition(":")
        if sep and key.strip() and not key.startswith((" ", "\t")):
            meta[key.strip()] = value.strip().strip("\"'")
    return {}, text  # no closing fence: not front matter


class OpenSession(Protocol):
    """The session a book is found for (`loopd.runtimes.base.RuntimeContext`)."""

    @property
    def session_id(self) -> str: ...

    @property
    def cwd(self) -> str: ...


@dataclass(slots=True)
class SkillShelf:
    """Each open session's skills, found once when it opens and frozen like its
    instructions (the prompt's index and the `skill` tool read the same book)."""

    env: Mapping[str, str]
    reader: FileReader
    _books: dict[str, SkillBook] = field(default_factory=dict)

    def book(self, ctx: OpenSession) -> SkillBook:
        if ctx.session_id not in self._books:
            self._books[ctx.session_id] = find_skills(ctx.cwd, self.env, self.reader)
        return self._books[ctx.session_id]

    def forget(self, session_id: str) -> None:
        self._books.pop(session_id, None)


@dataclass(frozen=True, slots=True)
class Skill:
    book: SkillBook

    name: ClassVar[str] = "skill"
    kind: ClassVar[ToolKind] = "think"  # reads only the frozen index's own files
    description: ClassVar[str] = (
        "Load the instructions of one of the skills listed in the system prompt, by "
        "name. Load a skill before doing the task it is for, then follow it."
    )
    input_schema: ClassVar[dict[str, Any]] = arguments(["name"], name=text())

    def offered(self, env: ToolEnv) -> bool:
        return bool(self.book.skills)

    async def declare(self, args: Args, env: ToolEnv) -> Declaration:
        if self.book.get(args["name"]) is None:
            names = ", ".join(s.name for s in self.book.skills)
            raise ToolInputError(f"there is no skill {args['name']!r}; the skills are: {names}")
        return Declaration(title=f"Load skill {args['name']}", kind=self.kind)

    async def run(self, args: Args, env: ToolEnv, progress: ToolProgress) -> ToolResult:
        info = self.book.get(args["name"])
        assert info is not None  # declare checked it
        read = await asyncio.to_thread(
            info.reader.read, info.path, max_bytes=MAX_BODY_BYTES, over="cut"
        )
        if isinstance(read, ReadRefused):
            return failure(f"The skill {info.name} cannot be loaded: {read.reason}")
        _, body = split_front_matter(read.text())
        if len(body) > MAX_BODY_CHARS or read.cut:
            body = body[:MAX_BODY_CHARS] + "\n[... truncated ...]"
        folder = os.path.dirname(info.path)
        output = f"# Skill: {info.name}\n(files of this skill are in {folder})\n\n{body.strip()}"
        return ToolResult(output, content=(TextBlock(f"Loaded skill {info.name}"),))
