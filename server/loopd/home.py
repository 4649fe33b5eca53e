"""Where loopd's files are: its data dir and the user config file.

Standard library only, and light (no pathlib: the forwarder of `loopd acp`/`loopd
lsp` needs both paths before anything else loads, on every editor start): the
`*_path` functions give strings; `data_dir` and `user_config_file` the same as
`Path`s for the rest of loopd. platformdirs is loaded only when `LOOPD_HOME` is
unset.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pathlib import Path


def data_path(env: Mapping[str, str]) -> str:
    """Where loopd keeps its data (the session store): `$LOOPD_HOME`, else the
    platform's user data dir for "loopd". An empty variable counts as unset."""
    home = env.get("LOOPD_HOME")
    if home:
        return os.path.expanduser(home)
    import platformdirs

    return str(platformdirs.user_data_dir("loopd", appauthor=False))


def user_config_path(env: Mapping[str, str]) -> str:
    """`$XDG_CONFIG_HOME/loopd/config.toml`, where XDG_CONFIG_HOME defaults to
    `~/.config` (HOME from `env` when set) on every platform, as the docs promise."""
    base = env.get("XDG_CONFIG_HOME")
    if base:
        return os.path.join(base, "loopd", "config.toml")
    home = env.get("HOME") or os.path.expanduser("~")
    return os.path.join(home, ".config", "loopd", "config.toml")


def data_dir(env: Mapping[str, str]) -> Path:
    from pathlib import Path

    return Path(data_path(env))


def user_config_file(env: Mapping[str, str]) -> Path:
    from pathlib import Path

    return Path(user_config_path(env))
