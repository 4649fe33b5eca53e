"""Find, read and merge the config files; read loopd's environment variables.

Everything comes in as arguments (an environment mapping, a working directory) so a
test or a second editor connection never depends on the process's globals.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from loopd.config.merge import merge_layers
from loopd.config.parse import parse_config
from loopd.config.schema import Config, TrustState, WorkspaceStatus
from loopd.config.table import ConfigFileError
from loopd.config.trust.gate import gate_untrusted
from loopd.config.trust.store import MAX_BYTES, TrustStore, WorkspaceFile
from loopd.home import data_dir, user_config_file
from loopd.policy.reading import DiskReader
from loopd.protocol.reading import FileRead, ReadRefused
from loopd.protocol.tomlvalues import loads_toml

Env = Mapping[str, str]


@dataclass(frozen=True, slots=True, kw_only=True)
class EnvSettings:
    """The environment variables loopd reads itself. Keys stay out of `repr`."""

    anthropic_api_key: str | None = field(default=None, repr=False)
    anthropic_base_url: str | None = None
    openai_api_key: str | None = field(default=None, repr=False)
    openai_base_url: str | None = None
    ollama_host: str | None = None
    loopd_home: str | None = None


# What to set for a native runtime: the variables `read_env` reads.
HOW_TO_CONFIGURE = (
    "set ANTHROPIC_API_KEY (or ANTHROPIC_BASE_URL for an Anthropic-compatible server), "
    "OPENAI_API_KEY (or OPENAI_BASE_URL for an OpenAI-compatible server), "
    "or OLLAMA_HOST for a local Ollama"
)


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
    defaults `loopd login` stored). The workspace file applies whole only when its
    folder is trusted with exactly these bytes (`loopd.config.trust.store`, records under
    `data_dir(env)`); otherwise only the keys that tighten apply, and
    `Config.workspace` names the rest. An untrusted file that cannot be read or
    used is ignored whole (`WorkspaceStatus.problem`): it never stops loopd.
    Raises `ConfigFileError` for the user file and a trusted workspace file."""
    user_path = user_file if user_file is not None else user_config_file(env)
    ws_path = workspace_file if workspace_file is not None else workspace_config_file(cwd)
    below: list[tuple[Path | None, Mapping[str, Any]]] = [(None, base or {})]
    if user_path.is_file():
        below.append((user_path, _read_toml(user_path)))
    read = tuple(path for path, _ in below if path is not None)
    user = parse_config(merge_layers(below), read)
    try:
        found = WorkspaceFile.read(cwd, ws_path)
    except ConfigFileError as err:  # no bytes, so nothing that could be trusted
        status = WorkspaceStatus(
            folder=str(cwd), file=ws_path, state=TrustState.UNTRUSTED, sha256="", problem=_why(err)
        )
        return dataclasses.replace(user, workspace=status)
    if found is None:
        return user
    status = WorkspaceStatus(
        folder=found.folder,
        file=ws_path,
        state=TrustStore(data_dir(env)).state(found),
        sha256=found.sha256,
        content=found.content,
        runs=found.runs,
        fingerprint=found.fingerprint,
    )
    if status.state is TrustState.TRUSTED:  # the person's own: its errors are theirs
        document = _parse_toml(ws_path, found.content)
        config = parse_config(merge_layers([*below, (ws_path, document)]), (*read, ws_path))
        return dataclasses.replace(config, workspace=status)
    try:
        document, ignored = gate_untrusted(_parse_toml(ws_path, found.content), user)
        config = parse_config(merge_layers([*below, (ws_path, document)]), (*read, ws_path))
    except ConfigFileError as err:  # an untrusted file never stops loopd: ignored whole
        return dataclasses.replace(user, workspace=replace(status, problem=_why(err)))
    return dataclasses.replace(config, workspace=replace(status, ignored=ignored))


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


def _why(err: ConfigFileError) -> str:
    return err.problem if err.key == "(file)" else f"{err.key}: {err.problem}"


def _read_toml(path: Path) -> dict[str, Any]:
    """The person's own config file: it may be a link anywhere (dotfile managers, a
    Nix store), but it is read like every other file loopd reads (`loopd.policy.
    reading`): a regular file, without blocking, within `MAX_BYTES`."""
    match DiskReader(("/",)).read(str(path), max_bytes=MAX_BYTES):
        case ReadRefused(reason=reason):
            raise ConfigFileError(path, "(file)", f"cannot be read: {reason}")
        case FileRead(data=content):
            return _parse_toml(path, content)


def _parse_toml(path: Path, content: bytes) -> dict[str, Any]:
    try:
        return loads_toml(content.decode("utf-8"))
    except ValueError as exc:  # TOMLDecodeError, UnicodeDecodeError, too deep
        raise ConfigFileError(path, "(file)", f"not valid TOML: {exc}") from exc
