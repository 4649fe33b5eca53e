"""`loopd daemon enable|disable`: the systemd user unit that keeps the daemon up.

No test needs a running systemd: `systemctl` is a script on PATH that records its
arguments (systemd's part, not ours), and the unit is run as systemd would run it:
its `ExecStart=` command, parsed from the file, with its `Environment=`."""

from __future__ import annotations

import asyncio
import re
import shlex
import signal
from pathlib import Path

import pytest

from tests.e2e.acp.conftest import Home, raw_loopd
from tests.e2e.daemon.conftest import loopd, shared, status

pytestmark = pytest.mark.e2e


def systemctl(home: Home, code: int, said: str = "") -> dict[str, str]:
    """An environment whose `systemctl` exits `code` (saying `said` on stderr) and
    appends its arguments to `systemctl.log`."""
    bin_dir = home.root / "bin"
    bin_dir.mkdir(exist_ok=True)
    script = bin_dir / "systemctl"
    log = home.root / "systemctl.log"
    script.write_text(f'#!/bin/sh\necho "$*" >> {log}\necho "{said}" >&2\nexit {code}\n')
    script.chmod(0o755)
    return {"PATH": f"{bin_dir}:{shared(home)['PATH']}"}


def calls(home: Home) -> list[str]:
    log = home.root / "systemctl.log"
    return log.read_text().splitlines() if log.exists() else []


def environ(pid: int) -> dict[str, str]:
    raw = Path(f"/proc/{pid}/environ").read_bytes().decode()
    return dict(entry.partition("=")[::2] for entry in raw.split("\0") if entry)


def unit_path(home: Home) -> Path:
    return home.root / "config" / "systemd" / "user" / "loopd.service"


def service(unit: str, manager: dict[str, str]) -> tuple[list[str], dict[str, str]]:
    """The `ExecStart=` command of a unit and the environment it runs with, as a
    user manager whose environment is `manager` runs it: specifiers (`%h`, `%t`,
    `%%`) first, then `${VAR}` from `Environment=` (`$$` is a `$`), then words split
    as a shell's."""
    specifiers = {"h": manager["HOME"], "t": manager["XDG_RUNTIME_DIR"], "%": "%"}
    env = dict(manager)
    command = ""
    for line in unit.splitlines():
        key, _, value = line.partition("=")
        value = re.sub(r"%(.)", lambda m: specifiers[m[1]], value)
        if key == "ExecStart":
            command = value
        elif key == "Environment":
            for pair in shlex.split(value.replace("$$", "$")):
                name, _, setting = pair.partition("=")
                env[name] = setting
    expanded = re.sub(r"\$\$|\$\{(\w+)\}", lambda m: env[m[1]] if m[1] else "$", command)
    return shlex.split(expanded), env


async def test_enable_writes_a_unit_that_starts_the_daemon_and_disable_removes_it(
    daemon_home: Home,
) -> None:
    home = daemon_home
    path = systemctl(home, 0)
    code, out, err = await loopd(home, "daemon", "enable", **path)
    assert code == 0, err
    assert str(unit_path(home)) in out
    written = unit_path(home).read_text()
    assert calls(home) == ["--user show-environment", "--user daemon-reload",
                           "--user enable --now loopd.service"]  # fmt: skip

    code, _, _ = await loopd(home, "daemon", "enable", **path)
    assert code == 0 and unit_path(home).read_text() == written  # idempotent
    assert sorted(p.name for p in unit_path(home).parent.iterdir()) == ["loopd.service"]

    runtime = home.root / "runtime"  # the user manager's XDG_RUNTIME_DIR (%t)
    runtime.mkdir(mode=0o700)
    manager = {"PATH": "/usr/bin:/bin", "HOME": str(home.root), "XDG_RUNTIME_DIR": str(runtime),
               "ANTHROPIC_API_KEY": "sk-imported-by-the-desktop"}  # fmt: skip
    command, unit_env = service(written, manager)
    assert unit_env["LOOPD_HOME"] == str(home.root / "data")
    assert "PYTHONPATH" not in unit_env  # the interpreter finds its own loopd
    daemon = await asyncio.create_subprocess_exec(
        *command, env=unit_env, cwd="/",
        stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.DEVNULL,
    )  # fmt: skip
    path["XDG_RUNTIME_DIR"] = str(runtime)  # editors of that login session
    try:
        while not (found := await status(home, **path))["running"]:
            assert daemon.returncode is None, "the unit's daemon exited"
            await asyncio.sleep(0.05)
        assert found["pid"] == daemon.pid and found["idleSeconds"] is None  # stays up
        assert "ANTHROPIC_API_KEY" not in environ(daemon.pid)  # the manager's keys stay out
        assert environ(daemon.pid)["LOOPD_HOME"] == str(home.root / "data")
        async with raw_loopd(home, shared(home, **path)) as editor:  # an editor finds it
            response, _ = await editor.request("initialize", {"protocolVersion": 1})
            assert response["result"]["protocolVersion"] == 1
            assert (await status(home, **path))["connections"] == 1

        code, out, _ = await loopd(home, "doctor", **path)
        assert f"daemon: running, pid {daemon.pid}" in out
        assert f"by the systemd unit {unit_path(home)} (not enabled)" in out

        code, out, _ = await loopd(home, "daemon", "disable", **path)
        assert code == 0 and "removed" in out
        assert not unit_path(home).exists()
        assert list(unit_path(home).parent.iterdir()) == []  # nothing else was left
        assert calls(home)[-2:] == ["--user disable --now loopd.service", "--user daemon-reload"]
        code, out, _ = await loopd(home, "daemon", "disable", **path)
        assert code == 0 and out == "no loopd unit was enabled\n"
    finally:
        if daemon.returncode is None:
            daemon.send_signal(signal.SIGTERM)
        await daemon.wait()


@pytest.mark.parametrize("systemd", ["no user manager", "no systemctl"])
async def test_without_systemd_enable_says_why_and_writes_nothing(home: Home, systemd: str) -> None:
    if systemd == "no systemctl":
        path = {"PATH": str(home.root / "empty")}
    else:
        path = systemctl(home, 1, "Failed to connect to bus: No medium found")
    for action in ("enable", "disable"):
        code, out, err = await loopd(home, "daemon", action, **path)
        assert code == 1 and out == ""
        assert f"loopd: cannot {action} the daemon's unit: " in err
        assert ("Failed to connect to bus" in err) is (systemd == "no user manager")
    assert not (home.root / "config" / "systemd").exists()
    assert not (home.root / "data").exists()  # no daemon was started either


async def test_enable_leaves_a_loopd_service_it_did_not_write_alone(home: Home) -> None:
    unit_path(home).parent.mkdir(parents=True)
    unit_path(home).write_text("[Service]\nExecStart=/bin/true\n")
    path = systemctl(home, 0)
    for action in ("enable", "disable"):
        code, _, err = await loopd(home, "daemon", action, **path)
        assert unit_path(home).read_text() == "[Service]\nExecStart=/bin/true\n"
    assert code == 0  # disable: none of ours to remove
    assert calls(home) == ["--user show-environment"] * 2  # nothing enabled or stopped
    code, _, err = await loopd(home, "daemon", "enable", **path)
    assert code == 1 and "was not written by loopd" in err
