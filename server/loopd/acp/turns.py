"""`Turns`: the ACP handlers that run a session (prompt, cancel) and change its
settings (mode, model, config options).

A turn never ends in a JSON-RPC error for something that went wrong inside it: the
person reads a message in the transcript and the turn ends with a stop reason. Only
refusals before it starts (unknown session, queue full, live elsewhere) are errors,
so a client never takes a refused prompt for a finished turn. The deprecated mode and
legacy model APIs set the matching config option, so the views never disagree.
"""

from __future__ import annotations

import logging
import uuid
from typing import Any

from acp import RequestError
from acp.schema import PromptResponse, SetSessionConfigOptionResponse, SetSessionModeResponse

from loopd.acp.base import AgentBase
from loopd.acp.errors import mapped_errors, not_found, refused
from loopd.acp.models import MODEL_CATEGORY, SetSessionModelResponse
from loopd.acp.translate import (
    MODE_CATEGORY,
    PromptBlock,
    UnsupportedContent,
    config_options,
    option_in,
    prompt_of,
)
from loopd.protocol.events import AgentMessageChunk
from loopd.protocol.events_wire import to_wire
from loopd.protocol.turns import Outcome
from loopd.sessions.manager import SessionBusy, SessionNotFound

log = logging.getLogger(__name__)


class Turns(AgentBase):
    async def prompt(
        self, session_id: str, prompt: list[PromptBlock], **kwargs: Any
    ) -> PromptResponse:
        """One turn. Whatever goes wrong inside it ends it with a stop reason and a
        message the person can read; a `$/cancel_request` for this request cancels
        this prompt alone: its turn when it runs, its place in the queue when it waits
        (the SDK then answers -32800). A prompt refused because the queue is full is an
        error, never a stop reason a client would take for a finished turn."""
        try:
            content = prompt_of(prompt)
        except UnsupportedContent as err:
            raise RequestError.invalid_params({"details": str(err)}) from err
        link, manager = self._link(), await self.manager()
        try:
            outcome = await manager.prompt(session_id, content, link)
        except SessionNotFound as err:
            raise not_found(session_id, err) from err
        except SessionBusy as err:  # queue full, or live elsewhere: not a finished turn
            raise refused(session_id, err) from err
        except Exception as err:
            log.exception("turn in %s failed", session_id)
            await self._say(session_id, f"loopd: the turn failed: {err}")
            return PromptResponse(stop_reason="end_turn")
        return PromptResponse(stop_reason=outcome.stop_reason, field_meta=_meta_of(outcome))

    async def _say(self, session_id: str, text: str) -> None:
        wire = to_wire(AgentMessageChunk(text, f"msg_{uuid.uuid4().hex[:12]}"))
        try:
            await self._link().send_update(session_id, wire)
        except Exception:
            log.warning("could not show a message in %s", session_id, exc_info=True)

    async def cancel(self, session_id: str, **kwargs: Any) -> None:
        manager = self.started
        if manager is not None:  # nothing can run before the manager exists
            await manager.cancel(session_id)

    async def set_session_mode(
        self, session_id: str, mode_id: str, **kwargs: Any
    ) -> SetSessionModeResponse:
        """The deprecated mode API, kept in sync with the `mode` config option: it sets
        that option (the session then tells its clients the new mode and option list,
        once)."""
        await self._set_mirrored(session_id, MODE_CATEGORY, mode_id, "this session has no modes")
        return SetSessionModeResponse()

    async def set_session_model(
        self, session_id: str, model_id: str, **kwargs: Any
    ) -> SetSessionModelResponse:
        """The legacy model API: it sets the `model` config option, so the two views
        never disagree."""
        missing = "this session has no model choice"
        await self._set_mirrored(session_id, MODEL_CATEGORY, model_id, missing)
        return SetSessionModelResponse()

    async def _set_mirrored(self, session_id: str, category: str, value: str, missing: str) -> None:
        """Set the config option a legacy API mirrors; the session then tells every
        client the new value and option list, once."""
        manager = await self.manager()
        with mapped_errors(session_id):
            option = option_in(manager.view(session_id).config_options, category)
            if option is None:
                raise RequestError.invalid_params({"details": missing})
            await manager.set_config(session_id, option.id, value)

    async def set_config_option(
        self, config_id: str, session_id: str, value: str | bool, **kwargs: Any
    ) -> SetSessionConfigOptionResponse:
        if not isinstance(value, str):
            raise RequestError.invalid_params({"details": f"{config_id} takes a select value"})
        manager = await self.manager()
        with mapped_errors(session_id):
            view = await manager.set_config(session_id, config_id, value)
        return SetSessionConfigOptionResponse(config_options=config_options(view.config_options))


def _meta_of(outcome: Outcome) -> dict[str, Any] | None:
    """`_meta.loopd.verification`: the turn's seal, for clients that show it (the
    short line is already in the transcript for those that do not)."""
    if outcome.verification is None:
        return None
    return {"loopd": {"verification": outcome.verification.to_wire()}}
