"""`grep`: search file contents by regular expression.

Two backends, one result. ripgrep (`rg --json`) is used when it is on PATH because
it is fast and respects .gitignore; a pure-Python walk stands in otherwise. Both
visit files in the same order (depth first, each directory's entries sorted by
name, which is what `rg --sort path` does), skip hidden, symlinked and binary files,
and stop after one match more than the cap, so the text the model gets has one
format and one order whichever ran. Both skip what .gitignore ignores (the fallback
through `gitignore`, as glob does). What still differs: the regex dialect (Python's
rather than Rust's), and outside a git repository ripgrep reads no .gitignore.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import fnmatch
import json
import os
import re
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, replace
from typing import Any, ClassVar

from loopd.engine.ports import Declaration, ToolProgress, ToolResult
from loopd.executables import find_program, process_path
from loopd.policy.beneath import file_kind
from loopd.protocol.errors import ToolInputError
from loopd.protocol.events import ToolKind
from loopd.protocol.reading import FileReader, ReadRefused
from loopd.sandbox.base import sanitized_env
from loopd.tools.base import Args, failure
from loopd.tools.env import ToolEnv
from loopd.tools.gitignore import Ignore, inherited, is_within, read_ignore_file
from loopd.tools.glob import SEARCH_ROOT, search_root, searching
from loopd.tools.schema import arguments, flag, text

LINE_CAP = 1024 * 1024
"""Bytes of one line searched; past it, the rest of the line is skipped (both
backends: ripgrep's JSON line for such a match is dropped)."""
LINE_KEPT = 4096
"""Characters of a matching line kept in memory (the rendered cap is lower)."""


@dataclass(frozen=True, slots=True)
class Query:
    pattern: str
    root: str
    glob: str | None
    ignore_case: bool
    top: str = ""  # the workspace root holding `root`: ignore files above it are not read


@dataclass(frozen=True, slots=True)
class Match:
    path: str
    line: int
    text: str


class GrepFailed(Exception):
    pass


class Grep:
    """`rg` is the ripgrep executable to use, or None for the Python fallback."""

    name = "grep"
    kind: ToolKind = "search"
    description = (
        "Search file contents with a regular expression, under path (a directory or a "
        "file; default the working directory). Prints `path:line: text` for each "
        "matching line, sorted by path then line, capped. glob filters files (`*.py`, "
        "`src/**/*.ts`); hidden and binary files are skipped. Prefer this to grep in bash."
    )
    input_schema: ClassVar[dict[str, Any]] = arguments(
        ["pattern"],
        pattern=text("Regular expression."),
        path=SEARCH_ROOT,
        glob=text("File filter."),
        case_insensitive=flag("Ignore case."),
    )

    def __init__(self, rg: str | None) -> None:
        """`rg`: the ripgrep to run (a name on loopd's PATH or a path), None for the
        pure-Python search. It is looked up at each call (`find_program`), never in
        the workspace: it runs outside the sandbox."""
        self.rg = rg

    async def declare(self, args: Args, env: ToolEnv) -> Declaration:
        root = search_root(args, env)
        return searching(f"Search for `{args['pattern']}` in {env.display(root)}", root)

    async def run(self, args: Args, env: ToolEnv, progress: ToolProgress) -> ToolResult:
        query = Query(
            args["pattern"],
            search_root(args, env),
            args.get("glob"),
            args.get("case_insensitive", False),
        )
        query = replace(query, top=next((r for r in env.roots if is_within(query.root, r)), ""))
        kind = await asyncio.to_thread(_root_kind, query.root)
        if kind is None:
            return failure(f"{env.display(query.root)} does not exist")
        if kind not in ("directory", "regular file"):
            return failure(f"{env.display(query.root)} is a {kind}; grep searches files")
        want = env.limits.grep_max_matches + 1
        folder = query.root if kind == "directory" else os.path.dirname(query.root)
        reader = env.reader.within((*env.roots, folder))  # an approved folder outside too
        rg = None if self.rg is None else find_program(self.rg, process_path(), outside=env.roots)
        try:
            if rg is None:
                found, unread = await asyncio.to_thread(_python_search, query, want, reader)
            else:
                found, unread = await _rg_search(rg, query, want), set()
        except GrepFailed as e:
            return failure(f"grep failed: {e}")
        shown = [m for m in found if reader.withheld(m.path) is None]
        output = _render(shown, query, env)
        if withheld := len(unread | {m.path for m in found} - {m.path for m in shown}):
            what = (
                "file that looks like a secret is"
                if withheld == 1
                else "files that look like secrets are"
            )
            output += f"\n[{withheld} {what} withheld.]"
        return ToolResult(output=output)


def _root_kind(path: str) -> str | None:
    """What the search root is (`file_kind`), or None when it does not exist. A FIFO
    or device is refused up front: ripgrep reads a path it is given, and would block
    on a FIFO forever."""
    try:
        return file_kind(os.stat(path).st_mode)
    except FileNotFoundError:
        return None


def _render(found: list[Match], query: Query, env: ToolEnv) -> str:
    if not found:
        return f"No matches for `{query.pattern}` in {env.display(query.root)}."
    cap, width = env.limits.grep_max_matches, env.limits.grep_max_line_chars
    lines = []
    for m in found[:cap]:
        text = m.text if len(m.text) <= width else m.text[:width] + " [...]"
        lines.append(f"{env.display(m.path)}:{m.line}: {text}")
    if len(found) > cap:
        lines.append(f"[Showing the first {cap} matches; there are more. Narrow the search.]")
    return "\n".join(lines)


# -- ripgrep ---------------------------------------------------------------------------


async def _rg_search(rg: str, query: Query, want: int) -> list[Match]:
    argv = [rg, "--json", "--no-config", "--sort", "path", "--regexp", query.pattern]
    if query.ignore_case:
        argv.append("--ignore-case")
    if query.glob:
        argv += ["--glob", query.glob]
    proc = await asyncio.create_subprocess_exec(
        *argv,
        "--",
        query.root,
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env=sanitized_env({"PATH": process_path()}),  # no key reaches it, nor a config
        limit=2 * LINE_CAP,  # one JSON line per matching line; longer ones are dropped
    )
    assert proc.stdout is not None and proc.stderr is not None
    errors = asyncio.ensure_future(proc.stderr.read())
    found: list[Match] = []
    read_all = False
    try:
        async for event in _rg_events(proc.stdout):
            if event["type"] == "match":
                found.append(_rg_match(event["data"]))
                if len(found) >= want:
                    break
        else:
            read_all = True
    finally:
        if not read_all:  # killed only when stopped early: its exit status is the news
            with contextlib.suppress(ProcessLookupError):
                proc.kill()
        code = await proc.wait()
        message = (await errors).decode("utf-8", "replace").strip()
    # 1 is "no match"; 2 (or a signal) with nothing found is a failure, while 2 after
    # matches means some file could not be read, and the matches stand.
    if read_all and code not in (0, 1) and not found:
        raise GrepFailed(message or f"ripgrep exited with status {code}")
    return found


async def _rg_events(stdout: asyncio.StreamReader) -> AsyncIterator[dict[str, Any]]:
    """ripgrep's JSON events. A line over the reader's limit is dropped (the reader
    discards what it buffered), and so is whatever is left of it after the drop,
    which does not parse: memory stays bounded whatever the files hold."""
    while True:
        try:
            raw = await stdout.readline()
        except ValueError:
            continue
        if not raw:
            return
        try:
            event = json.loads(raw)
        except ValueError:
            continue
        if isinstance(event, dict):
            yield event


def _rg_match(data: dict[str, Any]) -> Match:
    text = _rg_text(data["lines"]).rstrip("\r\n")
    return Match(_rg_text(data["path"]), data["line_number"], text[:LINE_KEPT])


def _rg_text(field: dict[str, str]) -> str:
    """ripgrep sends UTF-8 as `text` and anything else base64 in `bytes`."""
    if "text" in field:
        return field["text"]
    return base64.b64decode(field["bytes"]).decode("utf-8", "replace")


# -- Python fallback -------------------------------------------------------------------


def _python_search(query: Query, want: int, reader: FileReader) -> tuple[list[Match], set[str]]:
    """The matches, and the files not searched because `reader` withholds them
    (secrets, loopd's own folders): those are never read, not even to be dropped."""
    try:
        regex = re.compile(query.pattern, re.IGNORECASE if query.ignore_case else 0)
    except re.error as e:
        raise ToolInputError(f"invalid regular expression {query.pattern!r}: {e}") from None
    found: list[Match] = []
    unread: set[str] = set()
    for path in _walk(query, reader):
        if reader.withheld(path) is not None:
            unread.add(path)
            continue
        for number, line in enumerate(_text_lines(path, reader), start=1):
            if regex.search(line):
                found.append(Match(path, number, line[:LINE_KEPT]))
                if len(found) >= want:
                    return found, unread
    return found, unread


def _walk(query: Query, reader: FileReader) -> Iterator[str]:
    """Files under the root in `rg --sort path` order; the root itself if a file.
    Iterative (a stack of entries still to visit): a tree of any depth is walked."""
    if not os.path.isdir(query.root):
        yield query.root
        return
    top = inherited(query.root, query.top or query.root, reader)
    pending: list[tuple[str, tuple[str, ...], Ignore | None]] = [(query.root, (), top)]
    while pending:
        path, here, ignore = pending.pop()
        if ignore is None:  # a file, already checked
            yield path
            continue
        text = read_ignore_file(reader, os.path.join(path, ".gitignore"))
        inner = ignore.extended(here, text)
        pending.extend(reversed(list(_entries(path, here, inner, query))))


def _entries(
    directory: str, here: tuple[str, ...], ignore: Ignore, query: Query
) -> Iterator[tuple[str, tuple[str, ...], Ignore | None]]:
    """A directory's entries to visit, by name: folders with the rules inside them,
    files with None."""
    try:
        with os.scandir(directory) as it:
            entries = sorted((e for e in it if not e.name.startswith(".")), key=lambda e: e.name)
    except OSError:
        return  # unreadable directories are skipped, as ripgrep does
    for entry in entries:
        if entry.is_symlink():
            continue
        is_dir = entry.is_dir()
        rel = (*here, entry.name)
        if ignore.ignored(rel, is_dir):
            continue
        if is_dir:
            yield entry.path, rel, ignore
        elif entry.is_file(follow_symlinks=False) and _selected(entry.path, query):
            yield entry.path, rel, None


def _text_lines(path: str, reader: FileReader) -> Iterator[str]:
    """The file's lines, each cut at `LINE_CAP` bytes; none for a file `reader`
    refuses (unreadable, a link out, anything but a regular file: a FIFO would block,
    a device never end), and no more once a NUL byte shows the file is binary. Read a
    line at a time, so a huge file or a huge line costs `LINE_CAP` of memory."""
    opened = reader.open(path)
    if isinstance(opened, ReadRefused):
        return
    with opened as f:
        while line := f.readline(LINE_CAP):
            if not line.endswith(b"\n") and len(line) == LINE_CAP:
                while (rest := f.readline(LINE_CAP)) and not rest.endswith(b"\n"):
                    pass  # the rest of an over-long line is not searched
            if b"\0" in line:
                return
            yield line.decode("utf-8", "replace").rstrip("\n").rstrip("\r")


def _selected(path: str, query: Query) -> bool:
    if query.glob is None:
        return True
    target = os.path.relpath(path, query.root) if "/" in query.glob else os.path.basename(path)
    return fnmatch.fnmatchcase(target, query.glob)
