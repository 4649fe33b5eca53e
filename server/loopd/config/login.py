"""What `loopd login` saved: credentials outside every config file.

A login is a set of environment-shaped values (the same variables a person would
export: `ANTHROPIC_API_KEY`, `OPENAI_BASE_URL`, ...) plus the defaults chosen with it
(runtime and model). Values are kept in `<data dir>/login.json`, created 0600 in a
0700 directory; the data dir is hidden from the agent's commands in the bubblewrap
tiers and never read by its file tools, and the file is never named by a config
file, so a key cannot leak through `config.toml` or the session store.

The environment always wins: a stored value only fills a variable the environment
leaves unset or empty, so a key exported for one editor is never overridden by an
older login. The stored defaults are the lowest config layer: any config file that
sets `[defaults]` wins over them.
"""

from __future__ import annotations

import json
import os
import stat
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

LOGIN_FILE = "login.json"
MAX_LOGIN_BYTES = 64 * 1024
VARIABLES = (
    "ANTHROPIC_API_KEY",
    "ANTHROPIC_BASE_URL",
    "OPENAI_API_KEY",
    "OPENAI_BASE_URL",
    "OLLAMA_HOST",
)
SECRETS = frozenset({"ANTHROPIC_API_KEY", "OPENAI_API_KEY"})
DEFAULT_KEYS = frozenset({"runtime", "model"})


class LoginFileError(Exception):
    """The login file exists but cannot be used: it names the file and why."""


@dataclass(frozen=True, slots=True)
class Login:
    env: Mapping[str, str] = field(default_factory=dict)
    defaults: Mapping[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        unknown = set(self.env) - set(VARIABLES) | set(self.defaults) - DEFAULT_KEYS
        if unknown:
            raise LoginFileError(f"unknown login keys: {', '.join(sorted(unknown))}")

    @property
    def empty(self) -> bool:
        return not self.env and not self.defaults

    def config_layer(self) -> dict[str, Any]:
        """The stored defaults as a config document, the layer below the files."""
        return {"defaults": dict(self.defaults)} if self.defaults else {}


def login_path(data: Path) -> Path:
    return data / LOGIN_FILE


def read_login(data: Path) -> Login:
    """The stored login, or an empty one when nothing was saved. A file that is
    readable by others is refused: it may have been planted or copied carelessly."""
    path = login_path(data)
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except FileNotFoundError:
        return Login()
    except OSError as err:
        raise LoginFileError(f"{path}: cannot be read: {err.strerror}") from err
    with os.fdopen(fd, "rb") as handle:
        st = os.fstat(handle.fileno())
        if not stat.S_ISREG(st.st_mode) or st.st_size > MAX_LOGIN_BYTES:
            raise LoginFileError(f"{path}: not a loopd login file (a regular file, small)")
        if st.st_uid != os.getuid() or st.st_mode & 0o077:
            raise LoginFileError(
                f"{path}: must belong to you and be readable only by you (chmod 600)"
            )
        raw = handle.read(MAX_LOGIN_BYTES)
    try:
        document = json.loads(raw)
        return Login(dict(document.get("env", {})), dict(document.get("defaults", {})))
    except (ValueError, AttributeError, TypeError) as err:
        raise LoginFileError(f"{path}: not a loopd login file ({err})") from err


def write_login(data: Path, login: Login) -> Path:
    """Replace the stored login atomically; the file is 0600 from its first byte."""
    data.mkdir(parents=True, exist_ok=True, mode=0o700)
    path = login_path(data)
    tmp = path.with_name(f".{LOGIN_FILE}.{os.getpid()}")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
    with os.fdopen(fd, "w") as handle:
        json.dump({"env": dict(login.env), "defaults": dict(login.defaults)}, handle, indent=2)
    os.replace(tmp, path)
    return path


def forget_login(data: Path) -> bool:
    """Remove the stored login; False when there was none."""
    try:
        login_path(data).unlink()
    except FileNotFoundError:
        return False
    return True


def with_login(env: Mapping[str, str], login: Login) -> dict[str, str]:
    """`env` with the stored values filling what it leaves unset or empty."""
    merged = dict(env)
    for name, value in login.env.items():
        if not merged.get(name):
            merged[name] = value
    return merged
