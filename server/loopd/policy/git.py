"""Where git looks for what it runs: git directories, by what they are, not by name.

A git directory is recognised as git itself recognises one (`is_git_directory`): a
`HEAD` file plus `objects/` and `refs/`, or a `commondir` file for a linked worktree's
admin directory. So a renamed `.git`, a `--separate-git-dir`, a submodule's
`.git/modules/<name>` and a bare repository are all found, whatever they are called.

Inside one, git executes or trusts `GIT_FROZEN`: `config` (core.fsmonitor, filters,
aliases, core.hooksPath...), `hooks/`, `info/` (attributes that pick filters),
`commondir` and `config.worktree` (where more config comes from), and the admin
directories of submodules and worktrees, each a git directory of its own. Outside
one, `core.hooksPath` names a folder whose scripts git runs, and `include.path` files
that git reads as more config (`config_refs`).
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass

from loopd.policy.reading import DiskReader
from loopd.protocol.reading import FileRead

GIT_FROZEN = ("config", "hooks", "info", "commondir", "config.worktree", "modules", "worktrees")
_GITFILE = re.compile(r"^gitdir:\s*(.+?)\s*$")
_SECTION = re.compile(r'^\s*\[\s*([A-Za-z0-9.-]+)(?:\s+"[^"]*")?\s*\]')
_SETTING = re.compile(r"^\s*([A-Za-z][A-Za-z0-9-]*)\s*=\s*(.*?)\s*$")


def is_git_dir(path: str) -> bool:
    """Whether `path` is a git directory (see the module docstring)."""
    if not os.path.isfile(os.path.join(path, "HEAD")):
        return False
    if os.path.isfile(os.path.join(path, "commondir")):
        return True
    return os.path.isdir(os.path.join(path, "objects")) and os.path.isdir(
        os.path.join(path, "refs")
    )


def gitfile_target(path: str) -> str | None:
    """The git directory a `.git` file points to (`gitdir: ...`), canonical; None
    when `path` is not such a file."""
    text = read_git_file(path)
    if text is None:
        return None
    match = _GITFILE.match(text.partition("\n")[0])
    if match is None:
        return None
    return os.path.realpath(os.path.join(os.path.dirname(path), match.group(1)))


def git_dir_of(worktree: str) -> str | None:
    """The git directory of a worktree folder: its `.git` directory, or where its
    `.git` file points."""
    dot_git = os.path.join(worktree, ".git")
    if os.path.isdir(dot_git):
        return os.path.realpath(dot_git)
    return gitfile_target(dot_git) if os.path.isfile(dot_git) else None


def enclosing_git_dir(path: str, root: str) -> str | None:
    """The git directory that canonical `path` lies in, looking up to `root`
    (inclusive); None when there is none or `path` is not below `root`."""
    rel = os.path.relpath(os.path.dirname(path), root)
    if rel == ".." or rel.startswith("../"):
        return None
    parts = [] if rel == "." else rel.split("/")
    for depth in range(len(parts), -1, -1):
        candidate = os.path.join(root, *parts[:depth])
        if is_git_dir(candidate):
            return candidate
    return None


@dataclass(frozen=True, slots=True)
class ConfigRefs:
    """Paths a git directory's own config makes git run or read as more config."""

    hooks: str | None = None  # core.hooksPath
    includes: tuple[str, ...] = ()  # [include] / [includeIf "..."] path


def config_refs(git_dir: str, worktree: str, home: str) -> ConfigRefs:
    """`core.hooksPath` (relative to the worktree) and the included config files
    (relative to the git directory) named by `git_dir/config`, canonical, `~` the
    home directory. Only this one file is read: what it includes is not followed."""
    text = read_git_file(os.path.join(git_dir, "config"), 1 << 20)
    if text is None:
        return ConfigRefs()
    lines = text.splitlines()
    section, hooks, includes = "", None, []
    for line in lines:
        header = _SECTION.match(line)
        if header is not None:
            section = header.group(1).lower()
            continue
        setting = _SETTING.match(line)
        if setting is None:
            continue
        key, value = setting.group(1).lower(), _expand(setting.group(2).strip('"'), home)
        if section == "core" and key == "hookspath" and value:
            hooks = os.path.realpath(os.path.join(worktree, value))
        elif section in ("include", "includeif") and key == "path" and value:
            includes.append(os.path.realpath(os.path.join(git_dir, value)))
    return ConfigRefs(hooks, tuple(includes))


def _expand(value: str, home: str) -> str:
    return home + value[1:] if value == "~" or value.startswith("~/") else value


def read_git_file(path: str, max_bytes: int = 4096) -> str | None:
    """The first `max_bytes` of one of git's own files, or None. Read like every
    file loopd reads from a workspace (`loopd.policy.reading`), so a FIFO planted as
    `.git/config` cannot block the write policy; beneath `/`, because a worktree's
    git directory lives wherever git put it."""
    read = DiskReader(("/",)).read(path, max_bytes=max_bytes, over="cut")
    return read.text() if isinstance(read, FileRead) else None
