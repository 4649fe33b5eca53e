"""Where loopd's files are: its data dir and the user config file.

Standard library only (platformdirs, small, loaded only when `LOOPD_HOME` is unset):
the forwarder of `loopd acp`/`loopd lsp` needs both before anything else loads.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path


def data_dir(env: Mapping[str, str]) -> Path:
    """Where loopd keeps its data (the session store): `$LOOPD_HOME`, else the
    platform's user data dir for "loopd". An empty variable counts as unset."""
    home = env.get("LOOPD_HOME")
    if home:
        return Path(home).expanduser()
    import platformdirs

    return Path(platformdirs.user_data_dir("loopd", appauthor=False))


def user_config_file(env: Mapping[str, str]) -> Path:
    """`$XDG_CONFIG_HOME/loopd/config.toml`, where XDG_CONFIG_HOME defaults to
    `~/.config` (HOME from `env` when set) on every platform, as the docs promise."""
    base = env.get("XDG_CONFIG_HOME")
    if base:
        return Path(base) / "loopd" / "config.toml"
    home = Path(env["HOME"]) if env.get("HOME") else Path.home()
    return home / ".config" / "loopd" / "config.toml"
