"""What a sandboxed command may not change inside its writable roots, as mounts.

A read-only bind over a protected file is not enough on its own: the command could
rename the folder holding it (`mv .git .g && cp -r .g .git`) and leave git an
unprotected copy. Every mount point is a pin (renaming, removing or replacing one
fails with EBUSY), so the plan below pins the right things:

- each git directory a worktree uses (a `.git` folder, or where a `.git` file points)
  is bound onto itself, writable, so `git add` and `git commit` still work (objects,
  refs, index, logs) but the directory cannot be moved aside; inside it,
  `loopd.policy.git.GIT_FROZEN` (config, hooks, info, commondir, config.worktree, the
  submodule and worktree admin folders) is bound read-only; a missing `hooks`,
  `info` or `modules` becomes an empty read-only folder, so nothing can be planted
  there; a `core.hooksPath` folder is frozen the same way, and a config file the
  git config includes is read-only (an empty one where it is missing: git reads an
  empty config as nothing);
- every other protected name found (`loopd.policy.paths.PROTECTED_*`: `.vscode/`,
  `.zed/`, `.envrc`, a `.git` file...) is bound read-only;
- at the top of each writable root, a protected folder that does not exist
  (`.vscode`, `.zed`, `.loopd`...) is mounted as an empty read-only folder, so it
  cannot be created. The empty folder stays on disk afterwards; git ignores empty
  folders and no editor reads one as settings;
- every folder between a writable root and something protected is bound onto
  itself, so no parent can be renamed away either.

Other files that do not exist get no placeholder: an empty file is not neutral
(an empty `~/.bash_profile` hides `~/.profile`, an empty `commondir` stops git).
The file tools refuse them by name; see the README for what that leaves.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from loopd.policy import git
from loopd.policy.paths import PROTECTED_DIRS, PROTECTED_FILES
from loopd.policy.secrets import contains

PLACEHOLDER_DIRS = tuple(name for name in PROTECTED_DIRS if name != ".git")
GIT_PLACEHOLDERS = ("hooks", "info", "modules")


@dataclass(frozen=True, slots=True)
class Protection:
    """Canonical paths: `pins` are bound onto themselves (writable), `frozen` bound
    read-only, `placeholders` mounted as empty read-only folders, `empty_files` as
    empty read-only files (only config files git includes: empty is neutral there)."""

    pins: tuple[str, ...] = ()
    frozen: tuple[str, ...] = ()
    placeholders: tuple[str, ...] = ()
    empty_files: tuple[str, ...] = ()

    def mounts(self) -> list[str]:
        """bwrap arguments, to come after the writable roots' binds."""
        args: list[str] = []
        for path in self.pins:
            args += ["--bind", path, path]
        for path in self.frozen:
            args += ["--ro-bind", path, path]
        for path in self.placeholders:
            args += ["--tmpfs", path, "--remount-ro", path]
        for path in self.empty_files:
            args += ["--ro-bind", "/dev/null", path]
        return args


def protection(writable: Sequence[str], found: Iterable[str], home: str) -> Protection:
    """The mounts that keep `found` (existing protected entries the scan met inside
    the writable roots, canonical) and every root's top-level protected names
    unchangeable."""
    plan = _Plan(tuple(writable), home)
    for root in writable:
        plan.root_top(root)
    for path in found:
        plan.entry(path)
    return plan.finish()


@dataclass(slots=True)
class _Plan:
    """`Protection` being gathered; dicts keep the order paths were met in."""

    writable: tuple[str, ...]
    home: str
    pins: dict[str, None] = field(default_factory=dict)
    frozen: dict[str, None] = field(default_factory=dict)
    placeholders: dict[str, None] = field(default_factory=dict)
    empty_files: dict[str, None] = field(default_factory=dict)

    def root_top(self, root: str) -> None:
        for name in (*PROTECTED_DIRS, *PROTECTED_FILES):
            path = os.path.join(root, name)
            if os.path.lexists(path):
                self.entry(os.path.realpath(path))
            elif name in PLACEHOLDER_DIRS:
                self.placeholders[path] = None

    def entry(self, path: str) -> None:
        if not self._guarded(path):
            return
        if os.path.basename(path) != ".git":
            self.frozen[path] = None
        elif os.path.isdir(path):
            self.git_dir(path, os.path.dirname(path))
        else:
            self.frozen[path] = None  # the pointer itself
            target = git.gitfile_target(path)
            if target is not None and self._guarded(target):
                self.git_dir(target, os.path.dirname(path))

    def git_dir(self, git_dir: str, worktree: str) -> None:
        self.pins[git_dir] = None
        for name in git.GIT_FROZEN:
            path = os.path.join(git_dir, name)
            if os.path.lexists(path):
                self.frozen[os.path.realpath(path)] = None
            elif name in GIT_PLACEHOLDERS:
                self.placeholders[path] = None
        refs = git.config_refs(git_dir, worktree, self.home)
        if refs.hooks is not None and self._guarded(refs.hooks):
            target = self.frozen if os.path.isdir(refs.hooks) else self.placeholders
            target[refs.hooks] = None
        for include in refs.includes:
            if self._guarded(include):
                target = self.frozen if os.path.exists(include) else self.empty_files
                target[include] = None

    def finish(self) -> Protection:
        """Add the parents to pin; leave out what a frozen mount already covers (a
        mount point cannot be made inside a read-only one)."""
        for path in (*self.pins, *self.frozen, *self.placeholders, *self.empty_files):
            root = max((w for w in self.writable if contains(w, path)), key=len)
            parent = os.path.dirname(path)
            while parent != root and contains(root, parent):
                self.pins[parent] = None
                parent = os.path.dirname(parent)
        frozen = tuple(sorted(self.frozen, key=_depth))

        def free(path: str) -> bool:
            return not any(contains(f, path) and f != path for f in frozen)

        return Protection(
            tuple(p for p in sorted(self.pins, key=_depth) if free(p) and p not in self.frozen),
            tuple(p for p in frozen if free(p)),
            tuple(p for p in self.placeholders if free(p) and _creatable(p)),
            tuple(p for p in self.empty_files if free(p) and _creatable(p)),
        )

    def _guarded(self, path: str) -> bool:
        return any(contains(w, path) and w != path for w in self.writable)


def _creatable(path: str) -> bool:
    """Whether bwrap can make the mount point: where loopd cannot create an entry,
    neither can the command, and a mount point that fails would stop every command."""
    return os.access(os.path.dirname(path), os.W_OK)


def _depth(path: str) -> int:
    return path.count("/")
