"""Path policy for the in-process file tools: canonicalise, then decide.

The file tools run inside loopd, so no OS sandbox stands behind them; this module is
the boundary. Every path is first made absolute (against a root) and resolved with
`realpath`, so `..` and symlinks are judged by where they really lead. Then, in order:

- secrets are never read (`.env*` but not its examples, keys and certificates,
  credential files, `~/.ssh` and friends, loopd's own configuration: the rules are
  `loopd.policy.secrets`, shared with the reader and the scans);
- a path outside every session root needs the person;
- a write to a protected path needs the person even inside a root, whether it exists
  yet or not: anything in a git directory (`.git` and every directory git would take
  for one, however named: `loopd.policy.git`) or in a `core.hooksPath` folder, the
  editors' and agents' folder settings (`.vscode/`, `.zed/`, `.idea/`, `.helix/`,
  `.claude/`, `.codex/`, `.loopd/`...), shell rc files and the like (`PROTECTED_*`).
  Writing them is how an agent would turn one approved edit into code that runs
  later, outside any sandbox.

A path that cannot be resolved to one place is `Unresolvable`, a refusal: one holding
a NUL byte, or one whose symlinks are swapped while `realpath` walks them (it then
raises `OSError`, EINVAL or ENOENT, from a component that changed kind between its
`lstat` and `readlink`).

The verdict is advice for `RulePolicy`; the tools must still open files with
`loopd.policy.beneath` (re-exported here), because a symlink can be swapped between
this check and the open.
"""

from __future__ import annotations

import errno
import os
from collections.abc import Iterable
from dataclasses import dataclass
from enum import StrEnum

from loopd.policy import git
from loopd.policy.beneath import (
    DEFAULT_MAX_READ_BYTES,
    DEFAULT_MAX_WRITE_BYTES,
    FileTooLarge,
    PathEscapeError,
    open_beneath,
    write_text_beneath,
)
from loopd.policy.secrets import contains, is_secret_name, secret_reason

__all__ = [
    "DEFAULT_MAX_READ_BYTES",
    "DEFAULT_MAX_WRITE_BYTES",
    "FileTooLarge",
    "PathEscapeError",
    "PathIssue",
    "PathPolicy",
    "PathVerdict",
    "Unresolvable",
    "open_beneath",
    "write_text_beneath",
]

# Written only with the person's consent, even inside a root, whether or not they
# exist yet: what git runs (`.git` anywhere, and see `loopd.policy.git`), editors' and
# agents' folder settings and tasks (they name programs the editor starts),
# loopd's own config, shell start-up files and other files that tools load to run.
PROTECTED_DIRS = (
    ".git", ".loopd", ".vscode", ".idea", ".zed", ".helix", ".claude", ".codex",
    ".devcontainer",
)  # fmt: skip
PROTECTED_FILES = (
    ".gitmodules", ".gitconfig", ".bashrc", ".bash_profile", ".bash_login",
    ".bash_logout", ".bash_aliases", ".profile", ".zshrc", ".zprofile", ".zshenv",
    ".zlogin", ".zlogout", ".kshrc", ".cshrc", ".tcshrc", ".envrc", ".ripgreprc",
    ".mcp.json", ".nvim.lua", ".nvimrc", ".exrc", ".lazy.lua",
)  # fmt: skip


class Unresolvable(PermissionError):
    """`path` cannot be resolved to one place (see the module doc): refused."""

    def __init__(self, path: str, detail: str) -> None:
        super().__init__(errno.EACCES, f"{path!r} {detail}")
        self.path = path


_RESOLVE_TRIES = 3  # a path that changed under one walk is walked again, twice


class PathIssue(StrEnum):
    SECRET = "secret"
    OUTSIDE_ROOTS = "outside_roots"
    PROTECTED = "protected"


@dataclass(frozen=True, slots=True)
class PathVerdict:
    """The canonical path and, when it may not be used freely, why (`reason` is written
    for the person). `root` is the session root containing the path."""

    path: str
    issue: PathIssue | None = None
    reason: str = ""
    root: str | None = None

    @property
    def ok(self) -> bool:
        return self.issue is None


def outermost(paths: Iterable[str]) -> tuple[str, ...]:
    """The canonical `paths` that lie in no other of them, in order: a mount over a
    folder covers what is below it, and a second mount below it (on the first's
    empty, read-only tmpfs) cannot even be made."""
    found = tuple(dict.fromkeys(paths))
    return tuple(p for p in found if not any(q != p and contains(q, p) for q in found))


def protected_reason(path: str, root: str, home: str = "") -> str | None:
    """Why writing canonical `path` (inside `root`) needs the person, or None. Names
    are matched whether or not the path exists; git directories are recognised by
    what they hold, so a renamed one is still one."""
    parts = [p.lower() for p in path[len(root) :].split("/") if p]
    for entry in PROTECTED_DIRS:
        if entry in parts:
            return f"{entry}/ is protected: files there configure or run programs"
    for entry in PROTECTED_FILES:
        if parts[-1:] == [entry]:
            return f"{entry} is protected: it configures programs that run later"
    return _git_reason(path, root, home)


def _git_reason(path: str, root: str, home: str) -> str | None:
    if git.is_git_dir(path) or git.enclosing_git_dir(path, root) is not None:
        return f"{path} is in a git directory: git runs and trusts what is there"
    git_dir = git.git_dir_of(root)
    refs = git.config_refs(git_dir, root, home) if git_dir is not None else git.ConfigRefs()
    if refs.hooks is not None and contains(refs.hooks, path):
        return f"{path} is in core.hooksPath ({refs.hooks}): git runs the scripts there"
    if path in refs.includes:
        return f"{path} is included by git's config: git reads it as its own config"
    return None


@dataclass(frozen=True, slots=True)
class PathPolicy:
    """Decides file-tool paths for one session. `roots` are canonical absolute
    directories, the first being where relative paths start. `extra_secrets` are
    further secret locations (loopd's own folders); `readable` are folders inside them
    the session may still read like any folder outside its roots (its commands' kept
    full outputs), files named like secrets excepted."""

    roots: tuple[str, ...]
    home: str
    extra_secrets: tuple[str, ...] = ()
    readable: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if not self.roots:
            raise ValueError("a path policy needs at least one root")

    def canonical(self, path: str, base: str | None = None) -> str:
        """Absolute and resolved: `~` is the home directory, relative paths start at
        `base` (default: the first root), symlinks and `..` are resolved.
        `Unresolvable` for a path with a NUL byte, or one still changing after a
        few walks (a symlink being swapped)."""
        if path == "~" or path.startswith("~/"):
            path = self.home + path[1:]
        joined = os.path.join(base or self.roots[0], path)
        if "\0" in joined:
            raise Unresolvable(joined, "holds a NUL byte")
        for _ in range(_RESOLVE_TRIES):
            try:
                return os.path.realpath(joined)
            except OSError:
                continue
        raise Unresolvable(joined, "changed while it was resolved (a symlink swapped?)")

    def root_of(self, path: str) -> str | None:
        return next((r for r in self.roots if contains(r, path)), None)

    def check_read(self, path: str) -> PathVerdict:
        canonical = self.canonical(path)
        kept = any(contains(r, canonical) for r in self.readable)
        if kept and not is_secret_name(os.path.basename(canonical)):
            return self._contained(canonical)
        reason = secret_reason(canonical, self.home, self.extra_secrets)
        if reason is not None:
            return PathVerdict(canonical, PathIssue.SECRET, reason, self.root_of(canonical))
        return self._contained(canonical)

    def check_write(self, path: str) -> PathVerdict:
        canonical = self.canonical(path)
        verdict = self._contained(canonical)
        if verdict.root is None:
            return verdict
        reason = secret_reason(canonical, self.home, self.extra_secrets) or protected_reason(
            canonical, verdict.root, self.home
        )
        if reason is not None:
            return PathVerdict(canonical, PathIssue.PROTECTED, reason, verdict.root)
        return verdict

    def _contained(self, canonical: str) -> PathVerdict:
        root = self.root_of(canonical)
        if root is None:
            reason = f"{canonical} is outside the session's folders"
            return PathVerdict(canonical, PathIssue.OUTSIDE_ROOTS, reason)
        return PathVerdict(canonical, root=root)
