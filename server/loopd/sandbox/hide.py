"""What a bubblewrap command cannot see outside its workspace, by construction.

Listing secret files one by one leaves out the ones nobody listed, so outside the
workspace the sandbox hides whole folders and shows back only what commands need:

- the home directory is an empty, private tmpfs (writes there vanish with the
  command); `HOME_READABLE` entries, and those the person adds in
  `[sandbox] home_readable`, are shown back read-only: git's settings and the
  toolchains people install in their home. Credential files known to live inside
  those entries stay masked (`HOME_MASKED`);
- the folder holding each workspace root is an empty tmpfs too, so the projects
  next to it (and their `.env` files) are out of sight, unless that folder is `/`, a
  session root itself, or already hidden. A root that is a git worktree or submodule
  keeps its git directory (and the repository's common one), shown read-only;
- loopd's own folders (its data: the session store; its user config) are hidden
  wherever they are;
- with Unix sockets allowed by a list (`[sandbox] allow_unix_sockets`), `/run` is an
  empty tmpfs and only the listed sockets are shown in it (and bound where they are).

The workspace roots, the working directory and the files the in-sandbox helper needs
are bound back on top, after these (mount order matters: later covers earlier).
Everything else on the machine stays visible read-only, as in Codex's and Claude
Code's sandboxes, with the per-name secret masks of `loopd.sandbox.scan` on top.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from loopd.policy.git import read_git_file
from loopd.policy.paths import outermost
from loopd.policy.secrets import contains

# Shown back read-only inside the hidden home: settings commands rely on and the
# usual places of language toolchains and their offline caches.
HOME_READABLE = (
    ".gitconfig", ".config/git", ".local/bin", ".local/lib", ".local/share/uv",
    ".local/share/pipx", ".local/share/mise", ".local/share/pnpm", ".cargo/bin",
    ".cargo/registry", ".cargo/git", ".rustup", ".nvm", ".npm", ".pyenv", ".rbenv",
    ".asdf", ".volta", ".bun/bin", ".deno/bin", "go/bin", "go/pkg/mod", ".sdkman",
    ".ghcup", ".dotnet", "miniconda3", "anaconda3", "miniforge3", ".conda", ".cache/uv",
)  # fmt: skip
# Credentials that live inside those entries: masked even though their folder shows.
HOME_MASKED = (".config/git/credentials", ".cargo/credentials", ".cargo/credentials.toml")
TMP = "/tmp"
RUN_KEPT = ("/run/systemd/resolve",)  # name resolution, when a grant turns the network on


@dataclass(frozen=True, slots=True)
class Hidden:
    """The mounts: `tmpfs` folders emptied and `shown` (source, target) pairs bound
    back read-only go before the workspace roots; `private` folders (the outermost
    of them: one inside another is emptied with it) emptied and
    `masked` files read as empty go after them (they may lie inside a root)."""

    tmpfs: tuple[str, ...]
    shown: tuple[tuple[str, str], ...]
    private: tuple[str, ...]
    masked: tuple[str, ...]


def hidden_view(
    home: str,
    roots: Sequence[str],
    private: Iterable[str] = (),
    home_readable: Iterable[str] = (),
    sockets: Sequence[str] = (),
) -> Hidden:
    """What to hide for commands whose workspace roots are `roots` (canonical)."""
    tmpfs: dict[str, None] = {}
    shown: dict[tuple[str, str], None] = {}
    home_hidden = home not in ("", "/") and os.path.isdir(home)
    if home_hidden:
        tmpfs[home] = None
        for entry in (*HOME_READABLE, *home_readable):
            target = os.path.join(home, entry.removeprefix("~/"))
            if os.path.exists(target):
                shown[(os.path.realpath(target), target)] = None
    for root in roots:
        for git_dir in linked_git_dirs(root):
            shown[(git_dir, git_dir)] = None
        parent = os.path.dirname(root)
        covered = (home_hidden and contains(home, parent)) or contains(TMP, parent)
        if parent != "/" and not covered and not any(contains(r, parent) for r in roots):
            tmpfs[parent] = None
    if sockets:
        tmpfs["/run"] = None
        for path in (*RUN_KEPT, *sockets):
            if os.path.exists(path):
                shown[(os.path.realpath(path), path)] = None
    masked = tuple(
        path
        for path in (os.path.join(home, m) for m in HOME_MASKED)
        if os.path.lexists(path) and any(contains(target, path) for _, target in shown)
    )
    own = outermost(os.path.realpath(p) for p in private if os.path.isdir(p))
    return Hidden(tuple(tmpfs), tuple(shown), own, masked)


def linked_git_dirs(root: str) -> tuple[str, ...]:
    """The git directory a worktree's or submodule's `.git` file points to, and the
    common directory it names (`commondir`); () for an ordinary repository."""
    pointer = read_git_file(os.path.join(root, ".git"))
    line = pointer.partition("\n")[0].strip() if pointer is not None else ""
    if not line.startswith("gitdir:"):  # no .git, or a directory: nothing outside the root
        return ()
    git_dir = os.path.realpath(os.path.join(root, line.removeprefix("gitdir:").strip()))
    found = [git_dir]
    common = read_git_file(os.path.join(git_dir, "commondir"))
    if common is not None:
        found.append(os.path.realpath(os.path.join(git_dir, common.strip())))
    return tuple(d for d in found if os.path.isdir(d))


def covered_by(hidden: Hidden, path: str) -> bool:
    """Whether `path` sits in a hidden folder (and so must be bound back to be seen)."""
    return any(contains(t, path) for t in (*hidden.tmpfs, *hidden.private))
