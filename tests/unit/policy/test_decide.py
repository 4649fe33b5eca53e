import contextlib
import errno
import os
import threading
from collections.abc import Callable
from pathlib import Path

import pytest

from loopd.engine.ports import Declaration, Policy, ToolCall, Verdict
from loopd.policy.decide import RulePolicy
from loopd.policy.modes import Mode, SandboxMode
from loopd.policy.network import NetworkGrant
from loopd.policy.rules import RuleSet
from loopd.policy.tiers import Tier
from loopd.protocol.approvals import ApprovalDecision

A, Q, D = Verdict.ALLOW, Verdict.ASK, Verdict.DENY


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    (root / ".git" / "hooks").mkdir(parents=True)
    (root / "src").mkdir()
    (tmp_path / "home" / ".ssh").mkdir(parents=True)
    return root


def make(ws: Path, mode: Mode = Mode.ASK, tier: Tier = Tier.BWRAP, **kw: object) -> RulePolicy:
    return RulePolicy(
        mode=mode,
        roots=(str(ws),),
        tier=tier,
        network=kw.pop("network", NetworkGrant()),  # type: ignore[arg-type]
        home=str(ws.parent / "home"),
        **kw,  # type: ignore[arg-type]
    )


def call(name: str = "bash") -> ToolCall:
    return ToolCall(id="c1", name=name, input={})


def bash(command: str, network: bool = False) -> Declaration:
    return Declaration(title=command, kind="execute", command=command, network=network)


def write(path: str) -> Declaration:
    return Declaration(title=path, kind="edit", writes=(path,))


def read(path: str) -> Declaration:
    return Declaration(title=path, kind="read", reads=(path,))


def test_rule_policy_is_a_policy(ws: Path) -> None:
    policy: Policy = make(ws)
    assert policy.decide(call(), bash("ls")).verdict is A


# (mode, tier, command) -> verdict: safe list, then sandboxed auto-allow, then ask.
@pytest.mark.parametrize(
    ("mode", "tier", "command", "verdict"),
    [
        (Mode.ASK, Tier.BWRAP, "ls -la", A),
        (Mode.ASK, Tier.NONE, "ls -la", A),
        (Mode.ASK, Tier.BWRAP, "npm test", A),
        (Mode.ASK, Tier.LANDLOCK, "npm test", A),
        (Mode.ASK, Tier.NETNS, "npm test", Q),
        (Mode.ASK, Tier.NONE, "npm test", Q),
        (Mode.ASK, Tier.NONE, "git status", Q),
        (Mode.ASK, Tier.BWRAP, "git status", A),
        (Mode.READ_ONLY, Tier.BWRAP, "git status", A),
        (Mode.READ_ONLY, Tier.BWRAP, "npm test", Q),
        (Mode.READ_ONLY, Tier.NONE, "cat README.md", A),
        (Mode.ACCEPT_EDITS, Tier.BWRAP, "npm test", A),
        (Mode.ACCEPT_EDITS, Tier.NONE, "npm test", Q),
        (Mode.FULL_AUTO, Tier.BWRAP, "npm test", A),
        (Mode.FULL_AUTO, Tier.NONE, "npm test", D),
        (Mode.FULL_AUTO, Tier.NONE, "ls", A),
    ],
)
def test_commands_by_mode_and_tier(
    ws: Path, mode: Mode, tier: Tier, command: str, verdict: Verdict
) -> None:
    assert make(ws, mode, tier).decide(call(), bash(command)).verdict is verdict


def test_decision_order_deny_then_ask_then_allow_then_safe_list(ws: Path) -> None:
    rules = RuleSet.parse(
        allow=["bash(git push:*)", "bash(ls:*)", "bash(rm -rf build)"],
        ask=["bash(git push:*)", "bash(ls:*)"],
        deny=["bash(rm:*)"],
    )
    policy = make(ws, Mode.ASK, Tier.NONE, rules=rules)
    denied = policy.decide(call(), bash("rm -rf build"))
    assert denied == (denied.__class__(D, "denied by the rule bash(rm:*)"))
    # ask beats allow, and beats the safe list too
    assert policy.decide(call(), bash("git push origin")).verdict is Q
    assert policy.decide(call(), bash("ls")).verdict is Q
    assert "bash(ls:*)" in policy.decide(call(), bash("ls")).reason


def test_allow_rules_beat_the_missing_sandbox(ws: Path) -> None:
    policy = make(ws, Mode.ASK, Tier.NONE, rules=RuleSet.parse(allow=["bash(npm test:*)"]))
    assert policy.decide(call(), bash("npm test -- -u")).verdict is A
    assert policy.decide(call(), bash("npm test && curl x | sh")).verdict is Q


@pytest.mark.parametrize(
    ("mode", "rel", "verdict"),
    [
        (Mode.ASK, "src/a.py", Q),
        (Mode.ACCEPT_EDITS, "src/a.py", A),
        (Mode.FULL_AUTO, "src/a.py", A),
        (Mode.READ_ONLY, "src/a.py", D),
        (Mode.ACCEPT_EDITS, ".git/hooks/pre-commit", Q),
        (Mode.ACCEPT_EDITS, ".git/config", Q),
        (Mode.ACCEPT_EDITS, ".loopd/config.toml", Q),
        (Mode.ACCEPT_EDITS, ".bashrc", Q),
        (Mode.ACCEPT_EDITS, ".env", Q),
        (Mode.FULL_AUTO, ".git/hooks/pre-commit", D),
        (Mode.ACCEPT_EDITS, "../outside.txt", Q),
        (Mode.FULL_AUTO, "../outside.txt", D),
    ],
)
def test_writes_by_mode(ws: Path, mode: Mode, rel: str, verdict: Verdict) -> None:
    decision = make(ws, mode).decide(call("edit"), write(str(ws / rel)))
    assert decision.verdict is verdict
    assert decision.reason


@pytest.mark.parametrize("mode", list(Mode))
def test_reads_inside_roots_are_allowed_in_every_mode(ws: Path, mode: Mode) -> None:
    assert make(ws, mode).decide(call("read"), read(str(ws / "src/a.py"))).verdict is A


@pytest.mark.parametrize("mode", list(Mode))
@pytest.mark.parametrize("rel", [".env", "src/.env.local", "key.pem", "../home/.ssh/id_ed25519"])
def test_secrets_are_never_read_even_with_an_allow_rule(ws: Path, mode: Mode, rel: str) -> None:
    policy = make(ws, mode, rules=RuleSet.parse(allow=["read", "*"]))
    decision = policy.decide(call("read"), read(str(ws / rel)))
    assert decision.verdict is D
    assert "secret" in decision.reason or "credentials" in decision.reason


def test_editing_a_secret_is_refused_because_editing_reads_it(ws: Path) -> None:
    target = str(ws / ".env")
    edit = Declaration(title=target, kind="edit", reads=(target,), writes=(target,))
    assert make(ws, Mode.ACCEPT_EDITS).decide(call("edit"), edit).verdict is D


def test_reading_an_example_env_file_is_fine(ws: Path) -> None:
    assert make(ws).decide(call("read"), read(str(ws / ".env.example"))).verdict is A


def test_reads_outside_the_roots_ask(ws: Path) -> None:
    decision = make(ws).decide(call("read"), read("/etc/hostname"))
    assert decision.verdict is Q
    assert "outside" in decision.reason


def test_a_symlink_out_of_the_workspace_is_judged_by_its_target(ws: Path) -> None:
    (ws / "link").symlink_to("/etc")
    assert make(ws).decide(call("read"), read(str(ws / "link/hostname"))).verdict is Q


def test_network_needs_the_grant_and_the_grant_applies_mid_turn(ws: Path) -> None:
    grant = NetworkGrant()
    policy = make(ws, Mode.ACCEPT_EDITS, network=grant)
    fetch = Declaration(title="fetch", kind="fetch", network=True)
    assert policy.decide(call("fetch"), fetch).verdict is Q
    assert policy.decide(call(), bash("npm install", network=True)).verdict is Q
    grant.grant()
    assert policy.decide(call("fetch"), fetch).verdict is A
    assert policy.decide(call(), bash("npm install", network=True)).verdict is A


def test_by_domain_a_command_needs_no_grant_but_a_tool_still_does(ws: Path) -> None:
    """The proxy decides a command's connections host by host; a tool's own network
    does not go through it."""
    policy = make(ws, Mode.ACCEPT_EDITS, by_domain=True)
    assert policy.decide(call(), bash("pip install x", network=True)).verdict is A
    fetch = Declaration(title="fetch", kind="fetch", network=True)
    assert policy.decide(call("fetch"), fetch).verdict is Q
    assert not policy.network.granted


def test_unknown_effects_ask_and_harmless_tools_run(ws: Path) -> None:
    policy = make(ws)
    assert policy.decide(call("mcp_x"), Declaration(title="x", kind="other")).verdict is Q
    assert policy.decide(call("plan"), Declaration(title="plan", kind="think")).verdict is A


def test_full_access_override_runs_commands_and_writes_anywhere(ws: Path) -> None:
    policy = make(ws, Mode.ASK, Tier.NONE, sandbox_mode=SandboxMode.FULL_ACCESS)
    assert policy.decide(call(), bash("rm -rf build")).verdict is A
    assert policy.decide(call("edit"), write("/tmp/elsewhere.txt")).verdict is A
    assert policy.decide(call("edit"), write(str(ws / ".git/config"))).verdict is Q


def test_remembered_answers_become_rules_and_survive_json(ws: Path) -> None:
    policy = make(ws, Mode.ASK, Tier.NONE)
    push = bash("git push origin main && npm publish")
    assert policy.decide(call(), push).verdict is Q
    policy.remember(call(), push, ApprovalDecision.ALLOW_ALWAYS)
    assert policy.decide(call(), bash("git push --tags")).verdict is A
    assert policy.decide(call(), bash("git push && rm -rf /")).verdict is Q
    policy.remember(call(), bash("rm -rf dist"), ApprovalDecision.REJECT_ALWAYS)
    assert policy.decide(call(), bash("rm -rf dist")).verdict is D
    assert policy.decide(call(), bash("rm -rf other")).verdict is Q

    saved = policy.remembered.to_json()
    assert saved == {
        "allow": ["bash(git push:*)", "bash(npm publish:*)"],
        "ask": [],
        "deny": ["bash(rm -rf dist)"],
    }
    restored = make(ws, Mode.ASK, Tier.NONE, remembered=RuleSet.from_json(saved))
    assert restored.decide(call(), bash("npm publish --dry-run")).verdict is A
    assert restored.decide(call(), bash("rm -rf dist")).verdict is D


def test_once_answers_are_not_remembered(ws: Path) -> None:
    policy = make(ws, Mode.ASK, Tier.NONE)
    for decision in (
        ApprovalDecision.ALLOW_ONCE,
        ApprovalDecision.REJECT_ONCE,
        ApprovalDecision.CANCELLED,
    ):
        policy.remember(call(), bash("npm test"), decision)
    assert policy.remembered == RuleSet()


def test_remembered_paths_are_exact(ws: Path) -> None:
    policy = make(ws)
    target = str(ws / "src" / "a*.py")
    policy.remember(call("edit"), write(target), ApprovalDecision.ALLOW_ALWAYS)
    assert policy.decide(call("edit"), write(target)).verdict is A
    assert policy.decide(call("edit"), write(str(ws / "src" / "ab.py"))).verdict is Q


def test_allow_always_on_a_network_call_grants_the_network(ws: Path) -> None:
    grant = NetworkGrant()
    policy = make(ws, network=grant)
    policy.remember(
        call("fetch"), Declaration("f", "fetch", network=True), ApprovalDecision.ALLOW_ALWAYS
    )
    assert grant.granted


def test_remembered_secret_reads_stay_denied(ws: Path) -> None:
    policy = make(ws)
    env = read(str(ws / ".env"))
    policy.remember(call("read"), env, ApprovalDecision.ALLOW_ALWAYS)
    assert policy.decide(call("read"), env).verdict is D


def test_mode_can_change_between_calls(ws: Path) -> None:
    policy = make(ws)
    target = write(str(ws / "src/a.py"))
    assert policy.decide(call("edit"), target).verdict is Q
    policy.mode = Mode.ACCEPT_EDITS
    assert policy.decide(call("edit"), target).verdict is A


def _swap_forever(link: Path, stop: threading.Event) -> None:
    """Turn `link` into a symlink, a folder and nothing, over and over."""
    while not stop.is_set():
        for make_it in (lambda: link.symlink_to("src"), link.mkdir):
            with contextlib.suppress(OSError):
                make_it()
            with contextlib.suppress(OSError):
                link.unlink() if link.is_symlink() else link.rmdir()


@pytest.mark.parametrize("declared", [read, write])
def test_a_path_swapped_while_it_is_resolved_is_refused_never_raised(
    ws: Path, declared: Callable[[str], Declaration]
) -> None:
    """realpath raises (EINVAL, ENOENT) when a component changes kind between its
    lstat and its readlink; the decision must still come back, as a verdict."""
    policy, stop = make(ws, mode=Mode.ACCEPT_EDITS), threading.Event()
    swapper = threading.Thread(target=_swap_forever, args=(ws / "l", stop))
    swapper.start()
    try:
        verdicts = {policy.decide(call("read"), declared("l/a/b/c")).verdict for _ in range(2_000)}
    finally:
        stop.set()
        swapper.join()
    assert verdicts <= {Verdict.ALLOW, Verdict.ASK, Verdict.DENY}


def test_a_path_that_never_stops_changing_is_denied(
    ws: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def swapped(path: object, *args: object, **kwargs: object) -> str:
        raise OSError(errno.EINVAL, "Invalid argument", str(path))

    (ws / "l").symlink_to("src")
    policy = make(ws, mode=Mode.ACCEPT_EDITS)
    monkeypatch.setattr(os, "readlink", swapped)
    decision = policy.decide(call("write"), write("l/a.py"))
    assert decision.verdict is Verdict.DENY
    assert "changed while it was resolved" in decision.reason


def test_a_path_with_a_nul_byte_is_denied(ws: Path) -> None:
    decision = make(ws).decide(call("read"), read("src/a\0b"))
    assert decision.verdict is Verdict.DENY
    assert "NUL" in decision.reason
