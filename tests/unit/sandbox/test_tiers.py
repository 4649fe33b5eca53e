import contextlib
import os
import signal
import subprocess
import threading
import time
import uuid
from pathlib import Path

import pytest
from sandbox_boxes import FAKE_KEY, make_box

from loopd.policy.modes import Mode
from loopd.policy.tiers import Tier

ALL = [Tier.BWRAP_LANDLOCK, Tier.BWRAP, Tier.LANDLOCK, Tier.NETNS]
CONFINING = [t for t in ALL if t.contains_writes]
MASKING = [t for t in ALL if t.masks_secrets]
PID_NAMESPACED = [Tier.BWRAP_LANDLOCK, Tier.BWRAP, Tier.NETNS]


def connect_script(port: int) -> str:
    """A TCP connect with nothing but bash: the probe must not depend on an
    interpreter the sandbox may hide (a venv under /tmp is, behind bwrap's tmpfs)."""
    return f"bash -c 'exec 3<>/dev/tcp/127.0.0.1/{port} && echo connected'"


@pytest.mark.parametrize("tier", ALL)
def test_writes_inside_the_workspace_work(tier: Tier, workspace: Path) -> None:
    box = make_box(tier, workspace)
    result = box.run("echo hi > src/new.txt && mkdir -p build/out && echo ok")
    assert result.returncode == 0, result.stderr
    assert (workspace / "src/new.txt").read_text() == "hi\n"


@pytest.mark.parametrize("tier", CONFINING)
def test_writes_outside_the_roots_fail(tier: Tier, workspace: Path, outside: Path) -> None:
    box = make_box(tier, workspace)
    result = box.run(f"echo pwned > {outside}/x; touch /etc/loopd-escape; echo done")
    assert "done" in result.stdout
    assert not (outside / "x").exists()
    assert not Path("/etc/loopd-escape").exists()


@pytest.mark.parametrize("tier", CONFINING)
def test_writes_through_a_symlink_out_of_the_workspace_fail(
    tier: Tier, workspace: Path, outside: Path
) -> None:
    (outside / "target").write_text("original")
    (workspace / "link").symlink_to(outside / "target")
    box = make_box(tier, workspace)
    box.run("echo pwned > link")
    assert (outside / "target").read_text() == "original"


@pytest.mark.parametrize("tier", MASKING)
def test_git_hooks_and_config_are_read_only(tier: Tier, workspace: Path) -> None:
    box = make_box(tier, workspace)
    result = box.run(
        "echo evil > .git/hooks/pre-commit; echo evil >> .git/config; "
        "echo fine > .git/HEAD && echo head-ok"
    )
    assert "head-ok" in result.stdout
    assert not (workspace / ".git/hooks/pre-commit").exists()
    assert (workspace / ".git/config").read_text() == "[core]\n"


@pytest.mark.parametrize("tier", MASKING)
def test_a_missing_hooks_folder_cannot_be_created(tier: Tier, workspace: Path) -> None:
    (workspace / ".git/hooks").rmdir()
    box = make_box(tier, workspace)
    box.run("mkdir -p .git/hooks; echo evil > .git/hooks/pre-commit")
    assert not (workspace / ".git/hooks/pre-commit").exists()


@pytest.mark.parametrize("tier", MASKING)
def test_secrets_read_as_nothing(tier: Tier, workspace: Path) -> None:
    home = workspace.parent / "home"
    (home / ".ssh").mkdir(parents=True)
    (home / ".ssh" / "id_ed25519").write_text("PRIVATE KEY")
    box = make_box(tier, workspace)
    result = box.run(f"cat .env; cat {home}/.ssh/id_ed25519; ls -A {home}/.ssh; echo end")
    assert "hunter2" not in result.stdout
    assert "PRIVATE" not in result.stdout
    assert "id_ed25519" not in result.stdout
    assert result.stdout.endswith("end\n")


@pytest.mark.parametrize("tier", ALL)
def test_network_is_off_until_granted_mid_session(
    tier: Tier, workspace: Path, listener: int
) -> None:
    box = make_box(tier, workspace)
    blocked = box.run(connect_script(listener))
    assert blocked.returncode != 0 and "connected" not in blocked.stdout
    assert "not found" not in blocked.stderr  # refused by the network, not a missing tool
    box.grant.grant()
    granted = box.run(connect_script(listener))
    assert granted.returncode == 0 and granted.stdout == "connected\n", granted.stderr


def test_the_listener_is_reachable_without_a_sandbox(listener: int) -> None:
    """The control for the network tests: the same probe works outside."""
    result = subprocess.run(
        ["sh", "-c", connect_script(listener)], capture_output=True, check=False
    )
    assert result.returncode == 0


@pytest.mark.parametrize("tier", ALL)
def test_no_provider_key_reaches_the_command(tier: Tier, workspace: Path) -> None:
    result = make_box(tier, workspace).run("env")
    assert result.returncode == 0
    assert FAKE_KEY not in result.stdout
    assert "API_KEY" not in result.stdout
    assert "PATH=" in result.stdout


@pytest.mark.parametrize("tier", [Tier.BWRAP, Tier.LANDLOCK])
def test_plan_mode_mounts_the_workspace_read_only(tier: Tier, workspace: Path) -> None:
    box = make_box(tier, workspace, Mode.READ_ONLY)
    result = box.run("cat .git/config; echo x > src/new.txt")
    assert result.returncode != 0
    assert not (workspace / "src/new.txt").exists()


def _alive(marker: str) -> bool:
    """Whether a `sleep MARKER` process exists (not merely a wrapper naming it)."""
    wanted = b"sleep\0" + marker.encode() + b"\0"
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                if f.read() == wanted:
                    return True
        except OSError:
            continue
    return False


def _gone(marker: str, within: float = 5.0) -> bool:
    deadline = time.monotonic() + within
    while _alive(marker):
        if time.monotonic() > deadline:
            return False
        threading.Event().wait(0.005)
    return True


def _appears(marker: str, within: float = 5.0) -> bool:
    deadline = time.monotonic() + within
    while not _alive(marker):
        if time.monotonic() > deadline:
            return False
        threading.Event().wait(0.005)
    return True


def _marker() -> str:
    return f"{uuid.uuid4().int % 10**6}.{uuid.uuid4().int % 10**6}"


@pytest.mark.parametrize("tier", PID_NAMESPACED)
def test_background_processes_die_with_the_command(tier: Tier, workspace: Path) -> None:
    marker = _marker()
    result = make_box(tier, workspace).run(f"sleep {marker} & echo started")
    assert result.stdout == "started\n"
    assert _gone(marker)


@pytest.mark.parametrize("tier", ALL)
def test_the_command_dies_with_the_thread_that_spawned_it(tier: Tier, workspace: Path) -> None:
    """Every tier kills the command when its spawner goes away (bwrap --die-with-parent,
    PR_SET_PDEATHSIG otherwise); pid-namespaced tiers take its children along."""
    marker = _marker()
    box = make_box(tier, workspace)
    prepared = box.prepare(f"sleep {marker} & exec sleep {marker}1")
    spawned: list[subprocess.Popen[bytes]] = []

    def spawn() -> None:
        spawned.append(
            subprocess.Popen(
                prepared.argv,
                env=dict(prepared.env),
                cwd=prepared.cwd,
                preexec_fn=prepared.preexec,
                start_new_session=True,
            )
        )
        # The spawner lives until the command runs, as a session does.
        assert _appears(marker + "1")

    worker = threading.Thread(target=spawn)
    worker.start()
    worker.join()
    try:
        assert spawned[0].wait(timeout=10) != 0
        assert _gone(marker + "1")
        if tier in PID_NAMESPACED:
            assert _gone(marker)
    finally:
        # What the shell tool does for tiers without a pid namespace.
        with contextlib.suppress(ProcessLookupError):
            os.killpg(spawned[0].pid, signal.SIGKILL)
