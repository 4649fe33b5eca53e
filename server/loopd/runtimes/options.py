"""The config options every foreign runtime offers: loopd's four modes and a model.

Modes are loopd's, not the CLI's: each runtime maps them onto its own permission
machinery (Claude Code permission modes, Codex approval policy plus sandbox), so the
editor shows one mode selector whatever runs the session.
"""

from __future__ import annotations

from typing import Final

from loopd.protocol.errors import ConfigError
from loopd.protocol.events import ConfigChoice, ConfigOption

MODE_CHOICES: Final = (
    ConfigChoice("plan", "Plan", "Read and plan; change nothing."),
    ConfigChoice("ask", "Ask", "Ask before every edit and command."),
    ConfigChoice("accept_edits", "Accept edits", "Edit files freely; ask before commands."),
    ConfigChoice("full_auto", "Full auto", "Run everything without asking."),
)
MODES: Final = tuple(c.value for c in MODE_CHOICES)
DEFAULT_MODE: Final = "ask"


def mode_option(current: str) -> ConfigOption:
    return ConfigOption(
        id="mode", name="Mode", category="mode", current_value=current, choices=MODE_CHOICES
    )


def model_option(current: str, models: tuple[str, ...]) -> ConfigOption:
    choices = tuple(ConfigChoice(m, m) for m in dict.fromkeys((current, *models)))
    return ConfigOption(
        id="model", name="Model", category="model", current_value=current, choices=choices
    )


def check_mode(value: str) -> str:
    if value not in MODES:
        raise ConfigError(f"unknown mode {value!r}; expected one of {', '.join(MODES)}")
    return value
