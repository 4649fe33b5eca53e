"""Find, read and merge the config files; read loopd's environment variables.

Everything comes in as arguments (an environment mapping, a working directory) so a
test or a second editor connection never depends on the process's globals.
"""

from __future__ import annotations

import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import platformdirs

from loopd.config.merge import merge_layers
from loopd.config.parse import parse_config
from loopd.config.schema import Config, ConfigFileError, EnvSettings

Env = Mapping[str, str]

# What to set for a native runtime: the variables `read_env` reads.
HOW_TO_CONFIGURE = (
    "set ANTHROPIC_API_KEY (or ANTHROPIC_BASE_URL for an Anthropic-compatible server), "
    "OPENAI_API_KEY (or OPENAI_BASE_URL for an OpenAI-compatible server), "
    "or OLLAMA_HOST for a local Ollama"
)


def user_config_file(env: Env) -> Path:
    """`$XDG_CONFIG_HOME/loopd/config.toml`, where XDG_CONFIG_HOME defaults to
    `~/.config` (HOME from `env` when set) on every platform, as the docs promise."""
    base = env.get("XDG_CONFIG_HOME")
    if base:
        return Path(base) / "loopd" / "config.toml"
    home = Path(env["HOME"]) if env.get("HOME") else Path.home()
    return home / ".config" / "loopd" / "config.toml"


def workspace_config_file(cwd: Path) -> Path:
    return cwd / ".loopd" / "config.toml"


def load_config(
    env: Env,
    cwd: Path,
    *,
    user_file: Path | None = None,
    workspace_file: Path | None = None,
    base: Mapping[str, Any] | None = None,
) -> Config:
    """Read the user file then the workspace file (either may be missing), merge them
    with the workspace winning, and validate. `base` is a layer below both files (the
    defaults `loopd login` stored). Raises `ConfigFileError`."""
    paths = (
        user_file if user_file is not None else user_config_file(env),
        workspace_file if workspace_file is not None else workspace_config_file(cwd),
    )
    layers = [(path, _read_toml(path)) for path in paths if path.is_file()]
    merged = merge_layers([(None, base or {}), *layers])
    return parse_config(merged, tuple(path for path, _ in layers))


def read_env(env: Env) -> EnvSettings:
    """The variables loopd reads itself; empty values count as unset."""

    def get(name: str) -> str | None:
        return env.get(name) or None

    return EnvSettings(
        anthropic_api_key=get("ANTHROPIC_API_KEY"),
        anthropic_base_url=get("ANTHROPIC_BASE_URL"),
        openai_api_key=get("OPENAI_API_KEY"),
        openai_base_url=get("OPENAI_BASE_URL"),
        ollama_host=get("OLLAMA_HOST"),
        loopd_home=get("LOOPD_HOME"),
    )


def data_dir(env: Env) -> Path:
    """Where loopd keeps its data (the session store): `$LOOPD_HOME`, else the
    platform's user data dir for "loopd"."""
    home = read_env(env).loopd_home
    if home is not None:
        return Path(home).expanduser()
    return Path(platformdirs.user_data_dir("loopd", appauthor=False))


def _read_toml(path: Path) -> dict[str, Any]:
    try:
        with path.open("rb") as handle:
            return tomllib.load(handle)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigFileError(path, "(file)", f"not valid TOML: {exc}") from exc
    except OSError as exc:
        raise ConfigFileError(path, "(file)", f"cannot be read: {exc.strerror}") from exc
