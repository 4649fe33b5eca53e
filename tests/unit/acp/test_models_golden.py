"""Golden JSON of the legacy model state ACP clients still read (`loopd.acp.models`):
derived from the session's `model` config option, in the unstable schema's shape."""

from __future__ import annotations

from loopd.acp.models import SessionModelState, model_state
from loopd.protocol.events import ConfigChoice, ConfigOption
from tests.unit.golden import assert_golden


def test_the_model_state_renders_its_golden_json() -> None:
    options = (
        ConfigOption("mode", "Mode", "mode", "ask", (ConfigChoice("ask", "Ask"),)),
        ConfigOption(
            "model",
            "Model",
            "model",
            "m2",
            (ConfigChoice("m1", "M1", "fast"), ConfigChoice("m2", "M2")),
        ),
    )
    state = model_state(options)
    assert state is not None
    built = state.model_dump(by_alias=True, exclude_none=True)
    assert_golden(__file__, "model_state", {"model_state": (built, SessionModelState)})
