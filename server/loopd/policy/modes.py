"""The session modes a person picks, and what each one means for approvals and the sandbox.

A mode is a pair of older, sharper ideas (Codex's vocabulary): an `ApprovalPolicy`, which
says when the person is asked, and a `SandboxMode`, which says what a command may touch
without asking. Users pick a `Mode`; the ACP adapter lists `MODES` as session modes,
`loopd run --mode` takes a `Mode` value.

`full_auto` never asks, but it is not "no boundary": commands still run in the
workspace-write sandbox, and anything that would have needed a question is denied
instead. Full filesystem and network access (`SandboxMode.FULL_ACCESS`) is never implied
by a mode; it is an explicit override in configuration, so nobody reaches it by clicking
through a mode picker.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum


class ApprovalPolicy(StrEnum):
    """When the person is asked. `NEVER` turns every question into a denial."""

    UNTRUSTED = "untrusted"
    ON_REQUEST = "on-request"
    ON_FAILURE = "on-failure"
    NEVER = "never"


class SandboxMode(StrEnum):
    """What a command may touch without a question."""

    READ_ONLY = "read-only"
    WORKSPACE_WRITE = "workspace-write"
    FULL_ACCESS = "full-access"


class Mode(StrEnum):
    READ_ONLY = "plan"
    ASK = "ask"
    ACCEPT_EDITS = "accept_edits"
    FULL_AUTO = "full_auto"

    @property
    def spec(self) -> ModeSpec:
        return _SPECS[self]

    @property
    def approval(self) -> ApprovalPolicy:
        return self.spec.approval

    @property
    def sandbox(self) -> SandboxMode:
        return self.spec.sandbox


DEFAULT_MODE = Mode.ASK


@dataclass(frozen=True, slots=True)
class ModeSpec:
    """A mode as the person sees it (`name`, `description`) and as the policy reads it."""

    mode: Mode
    name: str
    description: str
    approval: ApprovalPolicy
    sandbox: SandboxMode


MODES: tuple[ModeSpec, ...] = (
    ModeSpec(
        Mode.READ_ONLY,
        "Plan (read-only)",
        "Reads and read-only commands only; edits are refused and other commands ask.",
        ApprovalPolicy.UNTRUSTED,
        SandboxMode.READ_ONLY,
    ),
    ModeSpec(
        Mode.ASK,
        "Ask",
        "Reads in the workspace run freely; edits ask; commands run in the sandbox or ask.",
        ApprovalPolicy.ON_REQUEST,
        SandboxMode.WORKSPACE_WRITE,
    ),
    ModeSpec(
        Mode.ACCEPT_EDITS,
        "Accept edits",
        "Edits inside the workspace are applied without asking; commands run in the "
        "sandbox or ask.",
        ApprovalPolicy.ON_FAILURE,
        SandboxMode.WORKSPACE_WRITE,
    ),
    ModeSpec(
        Mode.FULL_AUTO,
        "Full auto",
        "Never asks: edits and sandboxed commands in the workspace run; anything that "
        "would need a question is refused.",
        ApprovalPolicy.NEVER,
        SandboxMode.WORKSPACE_WRITE,
    ),
)

_SPECS = {spec.mode: spec for spec in MODES}


def parse_mode(value: str) -> Mode:
    """A mode from user input: the value (`plan`) or a hyphenated spelling
    (`accept-edits`). Raises `ValueError` naming the choices."""
    normalised = value.strip().lower().replace("-", "_")
    for mode in Mode:
        if normalised in (mode.value, mode.name.lower()):
            return mode
    choices = ", ".join(m.value for m in Mode)
    raise ValueError(f"unknown mode {value!r}; choose one of: {choices}")
