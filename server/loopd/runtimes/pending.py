"""Option changes made while a turn runs wait for the turn boundary (seed 001).

A turn runs under the model, thinking level and mode it started with. Applied
between two of its steps, a change sends a request shape the provider may refuse
(thinking switched on between two tool steps: Anthropic answers 400, and the turn
fails), and the calls of one turn would be judged by two modes. The person who
wants the running turn to stop doing something cancels it; a new choice is for
what comes next.

`PendingOptions` holds the choices until the turn ends. Meanwhile the options shown
carry the chosen value, their description saying it applies from the next turn, so
the editor shows what the person picked and that it waits.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from loopd.protocol.events import ConfigOption

WAITS = "applies from the next turn"


@dataclass(slots=True)
class PendingOptions:
    """Chosen values by option id, in the order chosen (a later choice replaces one
    made earlier in the same turn)."""

    values: dict[str, str] = field(default_factory=dict)

    def hold(self, option_id: str, value: str) -> None:
        self.values.pop(option_id, None)
        self.values[option_id] = value

    def take(self) -> list[tuple[str, str]]:
        """Every held choice, in order; none is held after."""
        taken = list(self.values.items())
        self.values.clear()
        return taken

    def shown(self, options: tuple[ConfigOption, ...]) -> tuple[ConfigOption, ...]:
        """`options` with each held value as current, described as waiting."""
        return tuple(self._shown(o) for o in options)

    def _shown(self, option: ConfigOption) -> ConfigOption:
        value = self.values.get(option.id)
        if value is None:
            return option
        note = f"{value} {WAITS} (this turn keeps {option.current_value})"
        described = f"{option.description}. {note}" if option.description else note.capitalize()
        return replace(option, current_value=value, description=described)
