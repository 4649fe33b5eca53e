"""The legacy model API: `models` in session responses and `session/set_model`.

ACP moved model choice into a config option of category `model` (which loopd
offers), and the SDK in use no longer defines the older unstable shapes. Several
clients, and the ACP registry's daily protocol matrix, still read the session's
`models` state and call `session/set_model`, so loopd serves both, derived from the
one `model` config option: one source of truth, two views. The shapes below are
the unstable schema's (`SessionModelState`, `ModelInfo`, `SetSessionModelRequest`),
written out here only because the SDK dropped them.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Annotated, Any, Protocol, TypeVar

import pydantic
from acp.schema import (
    ForkSessionResponse,
    LoadSessionResponse,
    NewSessionResponse,
    ResumeSessionResponse,
)
from acp.utils import param_model
from pydantic import BaseModel, ConfigDict, Field

from loopd.acp.translate import option_in
from loopd.protocol.events import ConfigOption

MODEL_CATEGORY = "model"
SET_MODEL = "session/set_model"


class _Wire(BaseModel):
    model_config = ConfigDict(populate_by_name=True)


class ModelInfo(_Wire):
    model_id: Annotated[str, Field(alias="modelId")]
    name: str
    description: str | None = None


class SessionModelState(_Wire):
    current_model_id: Annotated[str, Field(alias="currentModelId")]
    available_models: Annotated[list[ModelInfo], Field(alias="availableModels")]


class SetSessionModelRequest(_Wire):
    session_id: Annotated[str, Field(alias="sessionId")]
    model_id: Annotated[str, Field(alias="modelId")]
    field_meta: Annotated[dict[str, Any] | None, Field(alias="_meta")] = None


class SetSessionModelResponse(_Wire):
    field_meta: Annotated[dict[str, Any] | None, Field(alias="_meta")] = None


R = TypeVar("R", bound=pydantic.BaseModel)


def _with_models(base: type[R]) -> type[R]:
    """`base` with the session's `models` state beside its modes and options."""
    return pydantic.create_model(
        base.__name__, __base__=base, models=(SessionModelState | None, None)
    )


NewSession = _with_models(NewSessionResponse)
LoadSession = _with_models(LoadSessionResponse)
ResumeSession = _with_models(ResumeSessionResponse)
ForkSession = _with_models(ForkSessionResponse)


def model_state(options: Sequence[ConfigOption]) -> SessionModelState | None:
    """The legacy state, derived from the model option so the two never drift."""
    if (option := option_in(options, MODEL_CATEGORY)) is None:
        return None
    choices = [
        ModelInfo(model_id=c.value, name=c.name, description=c.description) for c in option.choices
    ]
    return SessionModelState(current_model_id=option.current_value, available_models=choices)


class ModelRoutes(Protocol):
    """The route the SDK no longer declares, in the form its router reads: the
    router is built from this protocol together with the SDK's `Agent`."""

    @param_model(SetSessionModelRequest, method=SET_MODEL)
    async def set_session_model(
        self, session_id: str, model_id: str, **kwargs: Any
    ) -> SetSessionModelResponse: ...
