"""`write` and `edit`: the two ways a file changes, both shown as a diff.

The diff travels twice. In the declaration (`preview`) it is what the person
approves; in the result (`content`) it is what actually happened, which can differ
when the file moved on in between. Old and new texts are whole files, which is what
ACP's diff content expects.

`edit` is an exact replacement on purpose: the old text must appear exactly once, so
the model cannot change a place it did not mean to. Its declaration never refuses a
non-matching edit, because several edits to one file in one step are all declared
before the first runs, and the second may only match once the first has applied.
The preview is shown when it can be computed. The check that counts is made when the
call's group runs, by then after the step's earlier calls: just before the person is
asked (`refusal`: a missing file, text that does not match once), so nobody approves
an edit that cannot apply, and again in `run`.

Both refuse to change an existing file the agent has not read, or that changed since
it last read it (`loopd.context.freshness`): an edit computed from a stale picture
overwrites someone else's work. A new file needs no read. The refusal is checked
when the call is declared, before anyone is asked to approve it (a person must not
approve a change that then cannot run), again just before the person is asked, and
again when it runs: the file may have moved on in between. A read in the same step
does not help: the change was written before its result was seen.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from loopd.engine.ports import Declaration, ToolProgress, ToolResult
from loopd.protocol.errors import ToolInputError, ToolUnusable
from loopd.protocol.events import DiffContent, Location, ToolContent, ToolKind
from loopd.tools.base import Args, count_lines, failure, line_of, read_existing
from loopd.tools.env import ToolEnv
from loopd.tools.schema import arguments, flag, text

_PATH = text("File path, relative to the working directory or absolute.")


class Write:
    name = "write"
    kind: ToolKind = "edit"
    description = (
        "Create a file, or replace a file's whole content. Missing parent directories are "
        "created. To change part of an existing file, use edit instead."
    )
    input_schema: ClassVar[dict[str, Any]] = arguments(
        ["path", "content"], path=_PATH, content=text("The complete new content.", empty=True)
    )

    async def declare(self, args: Args, env: ToolEnv) -> Declaration:
        path = env.resolve(args["path"])
        try:
            old = await read_existing(env, path)
            verb = "Create" if old is None else "Write"
        except PermissionError:  # not readable before the policy decided: no old text
            old, verb = None, "Write"
        _check_fresh(env, path, old)
        return Declaration(
            title=f"{verb} {env.display(path)}",
            kind=self.kind,
            writes=(path,),
            locations=(Location(path, 1),),
            preview=(DiffContent(path, old, args["content"]),),
        )

    async def refusal(self, args: Args, env: ToolEnv) -> str | None:
        """Unread or stale now (an earlier call of the step may have changed the file
        since it was declared), before the person is asked."""
        path = env.resolve(args["path"])
        return env.reads.refusal(path, await read_existing(env, path), env.display(path))

    async def run(self, args: Args, env: ToolEnv, progress: ToolProgress) -> ToolResult:
        path = env.resolve(args["path"])
        known = True
        try:
            old = await read_existing(env, path)
            verb = "Created" if old is None else "Wrote"
        except PermissionError:  # a secret is written, never read; the write decides
            old, verb, known = None, "Wrote", False
        refusal = env.reads.refusal(path, old, env.display(path))
        if refusal is not None:
            return failure(refusal)
        written, note = await _land(env, path, old, args["content"], known)
        if written is None:
            return failure(note)
        return ToolResult(
            output=f"{verb} {env.display(path)} ({count_lines(written)} lines).{note}",
            content=(DiffContent(path, old, written),),
            locations=(Location(path, 1),),
        )


@dataclass(frozen=True, slots=True)
class _Replacement:
    old_text: str
    new_text: str
    count: int
    line: int  # of the first match


class Edit:
    name = "edit"
    kind: ToolKind = "edit"
    description = (
        "Replace exact text in a file. old_string must match the file exactly, including "
        "whitespace and indentation, and must occur exactly once unless replace_all is "
        "true; include enough surrounding lines to make it unique. Read the file first. "
        "Line-number prefixes from read are not part of the file."
    )
    input_schema: ClassVar[dict[str, Any]] = arguments(
        ["path", "old_string", "new_string"],
        path=_PATH,
        old_string=text("Text to replace."),
        new_string=text("Replacement text.", empty=True),
        replace_all=flag("Replace every occurrence instead of exactly one."),
    )

    async def declare(self, args: Args, env: ToolEnv) -> Declaration:
        path = env.resolve(args["path"])
        if args["old_string"] == args["new_string"]:
            raise ToolInputError("old_string and new_string are identical; nothing would change")
        try:
            old = await read_existing(env, path)
        except PermissionError:  # not readable before the policy decided: no preview
            old = None
        _check_fresh(env, path, old)
        change = None if old is None else _replace(old, args)
        preview: tuple[ToolContent, ...] = ()
        if change is not None and (change.count == 1 or args.get("replace_all", False)):
            preview = (DiffContent(path, change.old_text, change.new_text),)
        return Declaration(
            title=f"Edit {env.display(path)}",
            kind=self.kind,
            reads=(path,),
            writes=(path,),
            locations=(Location(path, change.line if change else None),),
            preview=preview,
        )

    async def refusal(self, args: Args, env: ToolEnv) -> str | None:
        """What `run` would refuse now (a missing file, an unread or stale one, text
        that does not match once or is ambiguous), before the person is asked."""
        planned = await _planned(args, env)
        return planned if isinstance(planned, str) else None

    async def run(self, args: Args, env: ToolEnv, progress: ToolProgress) -> ToolResult:
        if args["old_string"] == args["new_string"]:
            raise ToolInputError("old_string and new_string are identical; nothing would change")
        planned = await _planned(args, env)
        if isinstance(planned, str):
            return failure(planned)
        path, old, change = planned
        written, note = await _land(env, path, old, change.new_text)
        if written is None:
            return failure(note)
        where = f"line {change.line}" if change.count == 1 else f"first at line {change.line}"
        plural = "occurrence" if change.count == 1 else "occurrences"
        shown = env.display(path)
        return ToolResult(
            output=f"Edited {shown}: replaced {change.count} {plural} ({where}).{note}",
            content=(DiffContent(path, change.old_text, written),),
            locations=(Location(path, change.line),),
        )


async def _land(
    env: ToolEnv, path: str, old: str | None, new: str, known: bool = True
) -> tuple[str | None, str]:
    """Write `new` over `old` and remember what the file holds now: the text
    written and a note for the model, "" unless a person reviewed the write and kept
    only part of it; None and the note when nothing was written."""
    reviewed = await env.files.write_text(path, new)
    if reviewed is None:
        written: str | None = new
        note = ""
    else:
        written, note = reviewed.written, f"\n{reviewed.note}"
    if written is None:
        return None, note.strip()
    env.changes.record(path, old, written, known)
    env.reads.saw(path, written)
    return written, note


async def _planned(args: Args, env: ToolEnv) -> tuple[str, str, _Replacement] | str:
    """The edit as it would apply now (its path, the file's text, the change), or why
    it cannot: one check for `run` and for `refusal`."""
    path = env.resolve(args["path"])
    shown = env.display(path)
    old = await read_existing(env, path)
    if old is None:
        return f"{shown} does not exist; use write to create a file"
    refusal = env.reads.refusal(path, old, shown)
    if refusal is not None:
        return refusal
    change = _replace(old, args)
    if change is None:
        return (
            f"old_string was not found in {shown}. It must match exactly, including "
            "whitespace and indentation; read the file and copy the text from it."
        )
    if change.count > 1 and not args.get("replace_all", False):
        return (
            f"old_string occurs {change.count} times in {shown}; include more surrounding "
            "context to make it unique, or set replace_all to true to change all of them."
        )
    return path, old, change


def _check_fresh(env: ToolEnv, path: str, old: str | None) -> None:
    """`ToolUnusable` when changing `path` (now `old`) would be refused as unread or
    stale: said before the person is asked, not after (see the module doc)."""
    refusal = None if old is None else env.reads.refusal(path, old, env.display(path))
    if refusal is not None:
        raise ToolUnusable(refusal)


def _replace(text: str, args: Args) -> _Replacement | None:
    """Every occurrence of old_string in `text` replaced; None when there is none.
    Callers use `new_text` only when that is what was asked: one match, or
    replace_all."""
    old_string: str = args["old_string"]
    new_string: str = args["new_string"]
    if "\r\n" in text and "\r" not in old_string:
        # `read` shows lines without their CR; match the file's own line endings.
        old_string, new_string = (s.replace("\n", "\r\n") for s in (old_string, new_string))
    first = text.find(old_string)
    if first < 0:
        return None
    new_text = text.replace(old_string, new_string)
    return _Replacement(text, new_text, text.count(old_string), line_of(text, first))
