import pytest

from loopd.policy.modes import DEFAULT_MODE, MODES, ApprovalPolicy, Mode, SandboxMode, parse_mode


def test_every_mode_is_listed_once_with_words_for_the_person() -> None:
    assert [spec.mode for spec in MODES] == list(Mode)
    for spec in MODES:
        assert spec.name and spec.description.endswith(".")
        assert spec.mode.spec is spec


@pytest.mark.parametrize(
    ("mode", "approval", "sandbox"),
    [
        (Mode.READ_ONLY, ApprovalPolicy.UNTRUSTED, SandboxMode.READ_ONLY),
        (Mode.ASK, ApprovalPolicy.ON_REQUEST, SandboxMode.WORKSPACE_WRITE),
        (Mode.ACCEPT_EDITS, ApprovalPolicy.ON_FAILURE, SandboxMode.WORKSPACE_WRITE),
        (Mode.FULL_AUTO, ApprovalPolicy.NEVER, SandboxMode.WORKSPACE_WRITE),
    ],
)
def test_modes_map_to_an_approval_policy_and_a_sandbox(
    mode: Mode, approval: ApprovalPolicy, sandbox: SandboxMode
) -> None:
    assert (mode.approval, mode.sandbox) == (approval, sandbox)


def test_no_mode_implies_full_access_and_ask_is_the_default() -> None:
    assert all(spec.sandbox is not SandboxMode.FULL_ACCESS for spec in MODES)
    assert DEFAULT_MODE is Mode.ASK


@pytest.mark.parametrize(
    ("text", "mode"),
    [("plan", Mode.READ_ONLY), ("read_only", Mode.READ_ONLY), ("Accept-Edits", Mode.ACCEPT_EDITS),
     (" full_auto ", Mode.FULL_AUTO), ("ask", Mode.ASK)],
)  # fmt: skip
def test_parse_mode(text: str, mode: Mode) -> None:
    assert parse_mode(text) is mode


def test_parse_mode_names_the_choices() -> None:
    with pytest.raises(ValueError, match="plan, ask, accept_edits, full_auto"):
        parse_mode("yolo")
