"""Running outside the sandbox and reaching the network: what asks, what is never
auto-allowed nor remembered, and the per-call grants an allowed call carries."""

from pathlib import Path

import pytest

from loopd.engine.ports import Declaration, ToolCall, Verdict
from loopd.policy.decide import RulePolicy
from loopd.policy.grants import NO_GRANT, CallGrants, Grant, current_grant
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
    (tmp_path / "home").mkdir()
    (tmp_path / "out").mkdir()
    return root


def make(ws: Path, mode: Mode = Mode.ASK, **kw: object) -> RulePolicy:
    return RulePolicy(
        mode=mode,
        roots=(str(ws),),
        tier=Tier.BWRAP,
        network=kw.pop("network", NetworkGrant()),  # type: ignore[arg-type]
        home=str(ws.parent / "home"),
        **kw,  # type: ignore[arg-type]
    )


def call(call_id: str = "c1") -> ToolCall:
    return ToolCall(id=call_id, name="bash", input={})


def unsandboxed(command: str = "npm install", network: bool = False) -> Declaration:
    return Declaration(
        title=command, kind="execute", command=command, network=network, unsandboxed=True
    )


@pytest.mark.parametrize(
    ("mode", "rules", "verdict"),
    [
        (Mode.ASK, RuleSet(), Q),
        (Mode.ACCEPT_EDITS, RuleSet(), Q),
        (Mode.READ_ONLY, RuleSet(), Q),
        (Mode.ASK, RuleSet.parse(allow=["bash"]), Q),
        (Mode.ASK, RuleSet.parse(allow=["bash(npm install)"]), Q),
        (Mode.FULL_AUTO, RuleSet.parse(allow=["*"]), D),
        (Mode.ASK, RuleSet.parse(deny=["bash(npm:*)"]), D),
    ],
)
def test_an_unsandboxed_run_always_asks(
    ws: Path, mode: Mode, rules: RuleSet, verdict: Verdict
) -> None:
    decision = make(ws, mode, rules=rules).decide(call(), unsandboxed())
    assert decision.verdict is verdict
    if verdict is not D or mode is Mode.FULL_AUTO:
        assert "OUTSIDE the bwrap sandbox" in decision.reason


def test_full_access_configuration_runs_unsandboxed_anyway(ws: Path) -> None:
    policy = make(ws, sandbox_mode=SandboxMode.FULL_ACCESS)
    assert policy.decide(call(), unsandboxed()).verdict is A


def test_allow_always_on_an_unsandboxed_run_is_kept_as_once(ws: Path) -> None:
    policy = make(ws)
    policy.remember(call(), unsandboxed(network=True), ApprovalDecision.ALLOW_ALWAYS)
    assert policy.remembered == RuleSet()
    assert not policy.network.granted
    assert policy.decide(call("c2"), unsandboxed()).verdict is Q
    policy.remember(call(), unsandboxed(), ApprovalDecision.REJECT_ALWAYS)
    assert policy.decide(call("c3"), unsandboxed()).verdict is D


def test_an_allow_rule_does_not_turn_the_network_on(ws: Path) -> None:
    policy = make(ws, rules=RuleSet.parse(allow=["bash(curl:*)"]))
    curl = Declaration(title="curl x", kind="execute", command="curl x", network=True)
    decision = policy.decide(call(), curl)
    assert decision.verdict is Q
    assert "needs network access, which is off" in decision.reason
    policy.network.grant()
    assert policy.decide(call(), curl).verdict is A


def test_allow_always_on_a_network_call_grants_the_session_network(ws: Path) -> None:
    policy = make(ws)
    curl = Declaration(title="curl x", kind="execute", command="curl x", network=True)
    assert policy.decide(call(), curl).verdict is Q
    policy.remember(call(), curl, ApprovalDecision.ALLOW_ALWAYS)
    assert policy.network.granted
    assert policy.decide(call("c2"), curl).verdict is A


def run_grant(grants: CallGrants, call_id: str) -> Grant:
    with grants.running(call_id) as grant:
        assert current_grant() == grant
    return grant


def test_allowed_calls_carry_exactly_what_they_declared(ws: Path) -> None:
    grants = CallGrants()
    policy = make(ws, sandbox_mode=SandboxMode.FULL_ACCESS, grants=grants)
    out = str(ws.parent / "out" / "x.txt")
    hook = str(ws / ".git" / "hooks" / "pre-commit")
    free = str(ws / "a.txt")
    decl = Declaration(title="w", kind="edit", writes=(out, hook, free), network=True)
    assert policy.decide(call(), decl).verdict is Q  # the hook is protected
    assert run_grant(grants, "c1") == NO_GRANT
    policy.remember(call(), decl, ApprovalDecision.ALLOW_ONCE)
    assert run_grant(grants, "c1") == Grant(frozenset({out, hook}), network=True)
    assert run_grant(grants, "c1") == NO_GRANT  # used once


def test_a_rejected_call_gets_no_grant(ws: Path) -> None:
    grants = CallGrants()
    policy = make(ws, grants=grants)
    decl = Declaration(title="w", kind="edit", writes=(str(ws.parent / "out" / "x"),))
    assert policy.decide(call(), decl).verdict is Q
    policy.remember(call(), decl, ApprovalDecision.REJECT_ONCE)
    policy.remember(call(), decl, ApprovalDecision.CANCELLED)
    assert run_grant(grants, "c1") == NO_GRANT


def test_an_allowed_outside_read_is_granted_at_decision_time(ws: Path) -> None:
    grants = CallGrants()
    target = str(ws.parent / "out" / "x")
    policy = make(ws, grants=grants, rules=RuleSet.parse(allow=[f"read({target})"]))
    assert policy.decide(call(), Declaration("r", "read", reads=(target,))).verdict is A
    assert run_grant(grants, "c1").paths == {target}
