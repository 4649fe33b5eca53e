"""The real machine behind `build_catalog`'s injected lookups: PATH search and
`<cli> --version`. This is the only part of the catalog that touches the system.

The version probe runs the binary with a timeout in the editor's environment, its
PATH cleaned as for every program loopd runs outside the sandbox (`program_env`: a
Node CLI's `#!/usr/bin/env node` never finds a repository's `node`); a binary that
hangs, crashes or prints nothing recognisable still gets an entry, just without a
version (it may work for turns even when `--version` misbehaves).
"""

from __future__ import annotations

import logging
import os
import re
import subprocess
import threading

from loopd.catalog.build import CatalogBuild, Which, build_catalog
from loopd.config.load import Env
from loopd.config.schema import Config
from loopd.executables import find_program, program_env

log = logging.getLogger(__name__)

VERSION_TIMEOUT = 10.0
_VERSION_RE = re.compile(r"\d+\.\d+(?:\.\d+)?(?:[-+.][0-9A-Za-z.-]+)?")


def path_which(search_path: str | None, outside: tuple[str, ...] = ()) -> Which:
    """`find_program` over `search_path` (a PATH string), not the process's own
    PATH: absolute entries only, never a program beneath `outside` (the workspace: a
    cloned repository can hold a `claude`)."""

    def which(command: str) -> str | None:
        return find_program(command, search_path, outside=outside)

    return which


def parse_version(output: str) -> str | None:
    """The first version number in a `--version` output (`2.1.197 (Claude Code)`,
    `codex-cli 0.171.0`)."""
    match = _VERSION_RE.search(output)
    return match.group(0) if match else None


_Binary = tuple[str, int, int, int, int]  # path, device, inode, size, mtime (ns)
_versions: dict[_Binary, str | None] = {}


def cli_version(
    command: str, *, timeout: float = VERSION_TIMEOUT, env: Env | None = None
) -> str | None:
    """`command --version`, parsed; `None` when that fails. Asked once per process
    for each binary, and again when it changes (an upgrade replaces the file): the
    daemon builds an app for every editor connection, and Claude Code takes ~2 s to
    say its version. What is remembered is the binary's path, inode, size and mtime."""
    try:
        st = os.stat(command)
    except OSError:
        return _ask_version(command, timeout, env)
    binary = (command, st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)
    if binary not in _versions:
        _versions[binary] = _ask_version(command, timeout, env)
    return _versions[binary]


def _ask_version(command: str, timeout: float, env: Env | None) -> str | None:
    try:
        done = subprocess.run(
            [command, "--version"],
            env=None if env is None else dict(env),
            capture_output=True,
            text=True,
            timeout=timeout,
            stdin=subprocess.DEVNULL,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        log.warning("%s --version failed: %s", command, exc)
        return None
    if done.returncode != 0:
        log.warning("%s --version exited with %d", command, done.returncode)
        return None
    return parse_version(done.stdout) or parse_version(done.stderr)


_probed: dict[tuple[str, int, int, int], str | None] = {}
_probing = threading.Lock()


def probed_version(command: str, env: Env | None = None) -> str | None:
    """`cli_version`, asked once per binary as it is now: the daemon builds a catalog
    for every editor connection, and a CLI's `--version` can take seconds. Another
    binary at the path (an upgrade: a new inode, size or mtime) is asked again."""
    try:
        info = os.stat(command)
    except OSError:
        return cli_version(command, env=env)
    key = (os.path.realpath(command), info.st_ino, info.st_size, info.st_mtime_ns)
    with _probing:  # two connections building at once ask once
        if key not in _probed:
            _probed[key] = cli_version(command, env=env)
        return _probed[key]


def discover_catalog(config: Config, env: Env, workspace: str | None = None) -> CatalogBuild:
    """`build_catalog` against this machine: PATH from `env` (no program beneath
    `workspace`), version probes (each binary's once per process, see
    `probed_version`)."""
    outside = (workspace,) if workspace else ()
    which = path_which(env.get("PATH"), outside)
    probe_env = program_env(env, outside)
    return build_catalog(
        config, env, which=which, version_of=lambda command: probed_version(command, probe_env)
    )
