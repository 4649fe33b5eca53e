"""`.gitignore` matching in Python, for the tools that walk a tree themselves.

ripgrep honours `.gitignore`; glob (and grep without ripgrep) walk in-process, so they
read the same files here rather than asking git: running git on a repository the
agent may have written means running whatever its config names (`core.fsmonitor`,
`core.pager`...), outside the sandbox.

What is honoured: `.gitignore` in every directory of the walk and in the directories
between the repository's top and the walk's root (never above the workspace root
given), and `.git/info/exclude`. Pattern syntax is git's: `#` comments, `!`
negation, a trailing `/` for directories only, a `/` at the start or in the middle
anchoring the pattern to its file's directory, `*` `?` `[...]` within one component,
`**/`, `/**` and `/**/` across components, and backslash escapes. The last matching
pattern wins, deeper files after shallower ones, as in git. A directory that is
ignored is not entered, so nothing inside can be re-included (git's rule too).
Patterns are matched by `loopd.tools.wildmatch`, linear by construction (a
repository's pattern cannot freeze the process); one it cannot use is skipped with
a warning in the log, never an error for the walk.

An ignore file is read through the session's `FileReader`: only a regular file
beneath the roots (not a link out, a FIFO or a device: a file planted to block or
leak is skipped), and only its first `MAX_BYTES`.
"""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass

from loopd.protocol.reading import FileRead, FileReader
from loopd.tools.wildmatch import BadPattern, PathPattern, path_pattern

log = logging.getLogger(__name__)

MAX_BYTES = 256 * 1024


@dataclass(frozen=True, slots=True)
class Rule:
    """One pattern line, compiled against paths relative to its file's directory."""

    base: tuple[str, ...]
    pattern: PathPattern
    negated: bool
    dir_only: bool
    lead: tuple[str, ...] = ()  # for a file above the walk's root: the root's path below it


@dataclass(frozen=True, slots=True)
class Ignore:
    """The rules that apply at one point of a walk, shallowest first."""

    rules: tuple[Rule, ...] = ()

    def extended(self, base: tuple[str, ...], text: str) -> Ignore:
        """These rules followed by those of an ignore file in directory `base`."""
        added = tuple(r for line in text.splitlines() if (r := parse(line, base)) is not None)
        return Ignore(self.rules + added) if added else self

    def ignored(self, path: tuple[str, ...], is_dir: bool) -> bool:
        """Whether `path` (components relative to the walk's origin) is ignored."""
        for rule in reversed(self.rules):
            if rule.dir_only and not is_dir:
                continue
            if path[: len(rule.base)] != rule.base or len(path) == len(rule.base):
                continue
            if rule.pattern.match((*rule.lead, *path[len(rule.base) :])):
                return not rule.negated
        return False


def parse(line: str, base: tuple[str, ...]) -> Rule | None:
    """The rule of one `.gitignore` line, or None for a blank line or a comment."""
    line = _strip_trailing_spaces(line.rstrip("\r"))
    if not line or line.startswith("#"):
        return None
    negated = line.startswith("!")
    if negated or line.startswith(("\\!", "\\#")):  # `!` negates; `\!` `\#` are literal
        line = line[1:]
    dir_only = line.endswith("/") and not line.endswith("\\/")
    line = line.rstrip("/")
    if not line:
        return None
    parts = line.lstrip("/").split("/")
    if parts[-1] == "**":  # `a/**`: everything inside `a`, not `a` itself
        parts[-1:] = ["*", "**"]
    if "/" not in line:  # no slash: a name at any depth
        parts.insert(0, "**")
    try:
        pattern = path_pattern(parts)
    except BadPattern as err:
        log.warning("ignored .gitignore pattern %r: %s", line, err)
        return None
    return Rule(base, pattern, negated, dir_only)


def _strip_trailing_spaces(line: str) -> str:
    """Trailing spaces are dropped unless escaped with a backslash."""
    stripped = line.rstrip(" ")
    if stripped.endswith("\\") and len(stripped) < len(line):
        return stripped[:-1] + " "
    return stripped


def read_ignore_file(reader: FileReader, path: str) -> str:
    """The text of the ignore file at `path` (its first `MAX_BYTES`), or "" when
    `reader` refuses it: missing, a link out of the roots, a FIFO or device, a
    secret."""
    read = reader.read(path, max_bytes=MAX_BYTES, over="cut")
    return read.text() if isinstance(read, FileRead) else ""


def inherited(root: str, top: str, reader: FileReader) -> Ignore:
    """The rules that apply at `root` from above it: `.git/info/exclude` and the
    `.gitignore` files of the repository holding `root`, from its top down to the
    directory above `root`, never climbing past `top` (the workspace root). Paths
    are then relative to `root`; a pattern anchored above `root` is rebased."""
    chain: list[str] = []
    current = root
    while True:
        chain.append(current)
        if os.path.lexists(os.path.join(current, ".git")) or current == top:
            break
        parent = os.path.dirname(current)
        if parent == current or not is_within(parent, top):
            break
        current = parent
    rules: list[Rule] = []
    repo = chain[-1]
    sources = [os.path.join(repo, ".git", "info", "exclude")]
    sources += [os.path.join(d, ".gitignore") for d in reversed(chain[1:])]
    for source in sources:
        origin = repo if source.endswith("exclude") else os.path.dirname(source)
        rel = os.path.relpath(root, origin)
        prefix = [] if rel == "." else rel.split("/")
        for line in read_ignore_file(reader, source).splitlines():
            if (rule := parse(line, ())) is not None:
                rules.append(_rebased(rule, prefix))
    return Ignore(tuple(rules))


def is_within(path: str, directory: str) -> bool:
    """Whether canonical `path` is `directory` or below it."""
    return path == directory or path.startswith(directory.rstrip(os.sep) + os.sep)


def _rebased(rule: Rule, prefix: list[str]) -> Rule:
    """A rule of a directory above the walk's root: the path it sees is the root's
    path below that directory followed by the walked path."""
    return Rule((), rule.pattern, rule.negated, rule.dir_only, tuple(prefix))
