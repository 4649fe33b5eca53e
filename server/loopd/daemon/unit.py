"""`loopd daemon enable|disable`: the daemon kept warm by a systemd user service.

The unit is a plain service started at login (`WantedBy=default.target`), not
socket activation: the daemon binds its own socket in its private folder after
taking the data dir's lock (`loopd.daemon.serve`) and cannot take a listening
socket from systemd (it reads no `LISTEN_FDS`). A socket unit would also have to
make the folder's checks (`loopd.daemon.place`) in systemd's place. So the service
runs `<this interpreter> -m loopd.daemon`, exactly what a forwarder starts, with
this install's data dir (`LOOPD_HOME`), no idle exit (`LOOPD_DAEMON_IDLE=infinity`:
the point is that it stays up) and no credentials (`unit_text`). Editors find it
as they find one they started. It restarts whenever it exits (`Restart=always`):
after `loopd daemon stop` (an upgrade's new version comes up), and when a daemon
an editor had started held the data dir's lock (the unit's exits at once, then
takes over once that one is gone).

The unit is `loopd.service` in `$XDG_CONFIG_HOME/systemd/user` (default
`~/.config`). It starts with `MARK`: `enable` never overwrites a file it did not
write, and `disable` removes only such a file and the `default.target.wants` link
`systemctl enable` made for it. Where no user manager answers `systemctl --user`
(no systemd, or not for this user), both say why and write nothing.

Standard library only.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import NamedTuple

from loopd.executables import find_program
from loopd.home import data_path, expand_home, home_path

NAME = "loopd.service"
MARK = "# Written by `loopd daemon enable`; `loopd daemon disable` removes it.\n"
SYSTEMCTL_TIMEOUT = 30.0
ENV = "/usr/bin/env"  # where every systemd distribution has it


class NoSystemd(Exception):
    """No systemd user manager answers here: the reason, for the person."""


class UnitState(NamedTuple):
    path: Path
    ours: bool  # the file exists and `enable` wrote it
    enabled: bool  # started at login (`default.target.wants` links to it)


def unit_dir(env: Mapping[str, str]) -> Path:
    home = home_path(env)
    base = env.get("XDG_CONFIG_HOME") or os.path.join(home, ".config")
    return Path(expand_home(base, home)) / "systemd" / "user"


def unit_text(env: Mapping[str, str]) -> str:
    """The unit for this interpreter and this environment's data dir (absolute).

    The daemon starts with no credentials in its environment (as a forwarder
    starts it, `loopd.daemon.forward.daemon_env`), but a user manager's environment
    holds what the desktop session imported, keys included. So the command runs
    under `env -i` with only where things are: HOME (`%h`), XDG_RUNTIME_DIR (`%t`,
    where editors look for the socket), this PATH, LOOPD_HOME and no idle exit."""
    data = os.path.abspath(data_path(env))
    path = env.get("PATH") or os.defpath
    for value in (data, sys.executable, path):
        if any(c in value for c in '\n\r"\\'):
            raise ValueError(f"{value!r} cannot be written in a systemd unit")
    return (
        f"{MARK}[Unit]\nDescription=loopd daemon for {_escape(data)}\n\n"
        "[Service]\nType=simple\n"
        f'Environment="LOOPD_HOME={_escape(data)}"\n'
        "Environment=LOOPD_DAEMON_IDLE=infinity\n"
        f'ExecStart={ENV} -i HOME=%h XDG_RUNTIME_DIR=%t "PATH={_escape(path)}"'
        " LOOPD_HOME=${LOOPD_HOME} LOOPD_DAEMON_IDLE=${LOOPD_DAEMON_IDLE}"
        f' "{_escape(sys.executable)}" -m loopd.daemon\n'
        "Restart=always\nRestartSec=5\n\n"
        "[Install]\nWantedBy=default.target\n"
    )


def _escape(value: str) -> str:
    """A value as systemd reads it back: `%` starts a specifier, `$` a variable."""
    return value.replace("%", "%%").replace("$", "$$")


def state(env: Mapping[str, str]) -> UnitState:
    path = unit_dir(env) / NAME
    try:
        ours = path.read_text().startswith(MARK)
    except (OSError, UnicodeDecodeError):
        ours = False
    return UnitState(path, ours, ours and _wants(env).resolve() == path.resolve())


def _wants(env: Mapping[str, str]) -> Path:
    return unit_dir(env) / "default.target.wants" / NAME


def enable(env: Mapping[str, str]) -> Path:
    """Write the unit (unchanged if already so), enable and start it. Raises
    `NoSystemd` before writing anything, and `FileExistsError` for a `loopd.service`
    someone else wrote."""
    _require_systemd(env)
    found = state(env)
    if found.path.exists() and not found.ours:
        raise FileExistsError(f"{found.path} was not written by loopd: left alone")
    text = unit_text(env)
    if not found.ours or found.path.read_text() != text:
        found.path.parent.mkdir(parents=True, exist_ok=True)
        partial = found.path.with_suffix(".partial")
        partial.write_text(text)
        partial.replace(found.path)
    _systemctl(env, "daemon-reload")
    _systemctl(env, "enable", "--now", NAME)
    return found.path


def disable(env: Mapping[str, str]) -> Path | None:
    """Stop and disable the unit, and remove what `enable` wrote: the path removed,
    or None when there was none of ours."""
    _require_systemd(env)
    found = state(env)
    if not found.ours:
        return None
    _systemctl(env, "disable", "--now", NAME)
    wants = _wants(env)
    if wants.is_symlink() and wants.resolve() == found.path.resolve():
        wants.unlink()  # a manager that did not unlink it (it should have)
    found.path.unlink()
    _systemctl(env, "daemon-reload")
    return found.path


def _require_systemd(env: Mapping[str, str]) -> None:
    """Raise `NoSystemd` unless a user manager answers (systemctl itself checks
    that systemd runs: /run/systemd/system)."""
    try:
        _systemctl(env, "show-environment")
    except FileNotFoundError:
        raise NoSystemd("systemctl is not installed: systemd does not run here") from None
    except subprocess.CalledProcessError as err:
        said = (err.stderr or "").strip().splitlines()
        why = said[-1] if said else f"exit {err.returncode}"
        raise NoSystemd(f"no systemd user manager answers `systemctl --user`: {why}") from None


def _systemctl(env: Mapping[str, str], *args: str) -> None:
    """`systemctl --user ARGS`, the machine's: found on the absolute entries of the
    person's PATH and never in the folder the command was typed in (a repository's
    `systemctl` would run with the person's whole environment). Raises
    `FileNotFoundError` when there is none."""
    program = find_program("systemctl", env.get("PATH"), outside=(os.getcwd(),))
    if program is None:
        raise FileNotFoundError("systemctl")
    subprocess.run(
        [program, "--user", *args], env=dict(env), check=True, capture_output=True,
        text=True, timeout=SYSTEMCTL_TIMEOUT, stdin=subprocess.DEVNULL,
    )  # fmt: skip
