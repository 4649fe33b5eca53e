"""The config options every runtime offers: loopd's four modes and a model.

Modes are loopd's (`loopd.policy.modes`), not a CLI's: the native engine maps them to
its policy and sandbox, the foreign runtimes onto their own permission machinery
(Claude Code permission modes, Codex approval policy plus sandbox), so the editor
shows one mode selector whatever runs the session.
"""

from __future__ import annotations

from typing import Final

from loopd.policy.modes import DEFAULT_MODE as DEFAULT
from loopd.policy.modes import MODES as MODE_SPECS
from loopd.policy.modes import parse_mode
from loopd.protocol.errors import ConfigError
from loopd.protocol.events import ConfigChoice, ConfigOption

MODE_CHOICES: Final = tuple(ConfigChoice(m.mode.value, m.name, m.description) for m in MODE_SPECS)
MODES: Final = tuple(c.value for c in MODE_CHOICES)
DEFAULT_MODE: Final = DEFAULT.value


def mode_option(current: str, description: str | None = None) -> ConfigOption:
    """The mode selector; `description` says how this runtime contains what runs."""
    return ConfigOption(
        id="mode",
        name="Mode",
        category="mode",
        current_value=current,
        choices=MODE_CHOICES,
        description=description,
    )


def model_option(current: str, models: tuple[str, ...]) -> ConfigOption:
    choices = tuple(ConfigChoice(m, m) for m in dict.fromkeys((current, *models)))
    return ConfigOption(
        id="model", name="Model", category="model", current_value=current, choices=choices
    )


def check_mode(value: str) -> str:
    """The canonical mode id for user input (`accept-edits` too); ConfigError if none."""
    try:
        return parse_mode(value).value
    except ValueError as err:
        raise ConfigError(str(err)) from None


CLI_DEFAULT_EFFORT: Final = "default"
"""The effort choice that passes none: the CLI decides (its own default)."""


def effort_option(current: str, efforts: tuple[str, ...]) -> ConfigOption:
    """A foreign CLI's reasoning effort, as the editor's thinking selector."""
    choices = tuple(ConfigChoice(e, e.capitalize()) for e in (CLI_DEFAULT_EFFORT, *efforts))
    return ConfigOption(
        id="thought_level",
        name="Thinking",
        category="thought_level",
        current_value=current,
        choices=choices,
    )


def check_effort(value: str, efforts: tuple[str, ...]) -> str:
    """`value` when the CLI offers it (or it is the CLI's default); ConfigError if not."""
    if value == CLI_DEFAULT_EFFORT or value in efforts:
        return value
    offered = ", ".join((CLI_DEFAULT_EFFORT, *efforts))
    raise ConfigError(f"{value!r} is not offered for thought_level (offered: {offered})")
