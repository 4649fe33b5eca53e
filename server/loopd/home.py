"""Where loopd's files are: its data dir, the user config file and the daemon's
socket folder.

Standard library only, and light (no pathlib: the forwarder of `loopd acp`/`loopd
lsp` needs both paths before anything else loads, on every editor start): the
`*_path` functions give strings; `data_dir` and `user_config_file` the same as
`Path`s for the rest of loopd. platformdirs is loaded only when `LOOPD_HOME` is
unset, and not on Linux.

Every path comes from the environment it is given, never from this process's:
the daemon serves editors of different homes, and each connection's HOME and
XDG_* variables are its own (`home_path`). `os.path.expanduser` and `Path.home()`
read the process's HOME, so loopd does not call them on an editor's behalf.
"""

from __future__ import annotations

import os
import stat
import sys
from collections.abc import Mapping
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pathlib import Path


def data_path(env: Mapping[str, str]) -> str:
    """Where loopd keeps its data (the session store): `$LOOPD_HOME`, else the
    platform's user data dir for "loopd". An empty variable counts as unset."""
    data = env.get("LOOPD_HOME")
    if data:
        return expand_home(data, home_path(env))
    if sys.platform.startswith("linux"):  # platformdirs' answer, from `env`
        base = env.get("XDG_DATA_HOME", "").strip()
        return os.path.join(base or os.path.join(home_path(env), ".local", "share"), "loopd")
    import platformdirs

    return str(platformdirs.user_data_dir("loopd", appauthor=False))


def user_config_path(env: Mapping[str, str]) -> str:
    """`$XDG_CONFIG_HOME/loopd/config.toml`, where XDG_CONFIG_HOME defaults to
    `~/.config` (HOME from `env` when set) on every platform, as the docs promise."""
    base = env.get("XDG_CONFIG_HOME")
    if base:
        return os.path.join(base, "loopd", "config.toml")
    return os.path.join(home_path(env), ".config", "loopd", "config.toml")


def daemon_folder(env: Mapping[str, str]) -> str:
    """The private folder of the daemon's socket: `$XDG_RUNTIME_DIR/loopd` when the
    session has a runtime dir of this user's, else `<data dir>/run`. Only where it
    is: `loopd.daemon.place` makes it and refuses one that is not this user's alone."""
    runtime = env.get("XDG_RUNTIME_DIR") or ""
    if os.path.isabs(runtime) and _owned_dir(runtime):
        return os.path.join(runtime, "loopd")
    return os.path.join(data_path(env), "run")


def _owned_dir(path: str) -> bool:
    try:
        info = os.lstat(path)
    except OSError:
        return False
    return stat.S_ISDIR(info.st_mode) and info.st_uid == os.geteuid()


def home_path(env: Mapping[str, str]) -> str:
    """The home directory of the editor whose environment is `env`: its HOME when
    that is absolute, else this user's home in the password database (never this
    process's HOME, which in the daemon is another editor's)."""
    home = env.get("HOME", "")
    if os.path.isabs(home):
        return os.path.normpath(home)
    import pwd

    return pwd.getpwuid(os.geteuid()).pw_dir


def expand_home(path: str, home: str) -> str:
    """`path` with a leading `~` (alone or before a `/`) meaning `home`, and `~user`
    that user's home."""
    if path == "~" or path.startswith("~/"):
        return home + path[1:]
    return os.path.expanduser(path)  # `~user`: the password database, not HOME


def data_dir(env: Mapping[str, str]) -> Path:
    from pathlib import Path

    return Path(data_path(env))


def user_config_file(env: Mapping[str, str]) -> Path:
    from pathlib import Path

    return Path(user_config_path(env))
