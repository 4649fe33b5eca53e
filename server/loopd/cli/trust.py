"""`loopd trust [DIR]` / `loopd untrust [DIR]`, and how the CLI tells what an
untrusted workspace file could not set.

Trust covers the folder's `.loopd/config.toml` exactly as it is when trusted (its
sha256, see `loopd.config.trust.store`); the terminal is the one place trust is given
without an editor's question, and `loopd run --yes` never gives it.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from loopd.cli.exits import EXIT_FAILED, EXIT_OK
from loopd.cli.render import escape

if TYPE_CHECKING:
    from loopd.config import Config


def trust(args: argparse.Namespace) -> int:
    """Trust a folder's workspace file as it is now, and say what that lets apply."""
    from loopd.config import TrustStore, WorkspaceFile, data_dir, load_config
    from loopd.config import workspace_config_file as config_file

    env = dict(os.environ)
    where = Path(os.path.realpath(args.dir))
    found = WorkspaceFile.read(where, config_file(where))
    if found is None:
        print(
            f"loopd: {escape(str(config_file(where)))} does not exist: nothing to trust",
            file=sys.stderr,
        )
        return EXIT_FAILED
    before = load_config(env, where).workspace
    TrustStore(data_dir(env)).trust(found)
    file = escape(str(found.path))
    print(
        f"Trusted {escape(str(where))}: {file} (sha256 {found.sha256[:12]}) applies as it is now."
    )
    if before is not None and before.ignored:
        print(f"Settings that now apply: {escape(', '.join(before.ignored))}.")
    if found.runs:
        pinned = ", ".join(escape(path) for path, _ in found.runs)
        print(f"Files of the folder its runtimes name, pinned as they are now: {pinned}.")
    print("If the file or a pinned file changes, loopd ignores it again until you trust it again.")
    return EXIT_OK


def untrust(args: argparse.Namespace) -> int:
    from loopd.config import TrustStore, data_dir

    where = Path(os.path.realpath(args.dir))
    if TrustStore(data_dir(os.environ)).untrust(where):
        folder = escape(str(where))
        print(f"Withdrew trust from {folder}: its .loopd/config.toml only tightens from now on.")
    else:
        print(f"{escape(str(where))} was not trusted.")
    return EXIT_OK


def tell_workspace(config: Config) -> None:
    """Say once, on stderr, which workspace settings were ignored (never on stdout:
    it carries `--json` output)."""
    if config.workspace is not None and config.workspace.notice:
        print(f"loopd: {escape(config.workspace.notice)}", file=sys.stderr)
