"""loopd works on an editor's behalf from that editor's environment, never from
its own process's: in the daemon, the process's HOME, XDG_* and PATH are the first
editor's, so `os.environ`, `os.path.expanduser`, `Path.home()` and `os.getenv`
there would give editor B editor A's home to hide, secrets to withhold and config
to read. A lint over the sources: a module that consults them must be one of
those below, each for a stated reason."""

from __future__ import annotations

import os
import pwd
import re
from pathlib import Path

from loopd.home import data_path, home_path, user_config_path

SERVER = Path(__file__).resolve().parents[2] / "server" / "loopd"
PROCESS_ENV = re.compile(
    r"os\.environ|os\.getenv|expanduser|Path\.home\(|os\.putenv"
    r"|from\s+os\s+import\s[^\n]*\b(environ|getenv|putenv)\b|posix\.environ"
)
"""Ways to consult the process's environment: `os.environ` (and `environb`),
`os.getenv`, `~` expanded, `Path.home()`, and the same names imported from `os` or
read from `posix`."""
ALLOWED = {
    "cli": "commands run in the person's own process, for that person",
    "testing": "fakes for tests",
    "daemon/forward.py": "the forwarder runs in the editor's process and reads its own",
    "daemon/serve.py": "the daemon's own place and idle time, set when it started",
    "remote/serve.py": "`loopd serve` runs for the person who started it, with their config",
    "remote/link.py": "`loopd acp|lsp --remote` run in the editor's process: its token variable",
    "home.py": "`~user` goes through the password database, never HOME",
    "tools/env.py": "ToolEnv's defaults, for one editor in its own process",
    "sandbox/probe.py": "the probe's default environment, for `loopd doctor`",
    "runtimes/foreign/runtime.py": "a foreign CLI's default environment (the app always sets it)",
    "executables.py": "loopd's own PATH, for the programs it runs for itself (rg, bwrap)",
}


def test_only_the_listed_modules_consult_the_process_environment() -> None:
    found = {
        str(path.relative_to(SERVER))
        for path in SERVER.rglob("*.py")
        if PROCESS_ENV.search(path.read_text())
    }
    unlisted = {f for f in found if not any(f == a or f.startswith(a + "/") for a in ALLOWED)}
    assert unlisted == set(), "read the editor's environment (`loopd.home.home_path`)"


def test_the_rule_sees_each_way_of_consulting_the_environment() -> None:
    ways = (
        "os.environ['HOME']", "os.getenv('HOME')", "os.path.expanduser('~')",
        "Path.home()", "from os import environ", "from os import path, getenv as g",
        "posix.environ",
    )  # fmt: skip
    assert all(PROCESS_ENV.search(way) for way in ways)
    assert not PROCESS_ENV.search("from os import path\nenv.get('HOME')")


def test_where_loopd_keeps_things_follows_the_editor_s_environment() -> None:
    editor = {"HOME": "/home/b"}
    assert data_path(editor) == "/home/b/.local/share/loopd"
    assert data_path(editor | {"XDG_DATA_HOME": "/b/data"}) == "/b/data/loopd"
    assert data_path(editor | {"LOOPD_HOME": "~/loopd"}) == "/home/b/loopd"
    assert user_config_path(editor) == "/home/b/.config/loopd/config.toml"
    assert home_path({"HOME": "relative"}) == pwd.getpwuid(os.geteuid()).pw_dir
