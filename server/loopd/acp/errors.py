"""The session layer's errors as JSON-RPC errors, and the refusal of every ACP route
loopd does not implement.

Errors are mapped here and nowhere else, so every handler answers the same failure
with the same code: a session that does not exist is -32002 with its id, one refused
now (busy, live in another process, no turn running) is an invalid request, a bad
setting is invalid params, and no usable runtime is `auth_required`, which editors
answer by offering login.

Subclassing `acp.Agent` would otherwise inherit stubs that answer `{}` to requests we
never handle, and a client would believe them: `refuse_unimplemented` replaces each
with method-not-found (requests) or a logged no-op (notifications).
"""

from __future__ import annotations

import inspect
import logging
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from typing import Any

from acp import Agent, RequestError
from acp.schema import ClientCapabilities

from loopd.acp.auth import auth_required
from loopd.protocol.errors import ConfigError, RuntimeFailure
from loopd.sessions.manager import NoRuntime, SessionBusy, SessionHeld, SessionNotFound
from loopd.sessions.queue import NotRunning

log = logging.getLogger(__name__)


@contextmanager
def mapped_errors(
    session_id: str | None = None, capabilities: ClientCapabilities | None = None
) -> Iterator[None]:
    """The session layer's errors as JSON-RPC errors."""
    try:
        yield
    except SessionNotFound as err:
        raise not_found(session_id, err) from err
    except NoRuntime as err:
        raise auth_required(str(err), capabilities) from err
    except ConfigError as err:
        raise RequestError.invalid_params({"details": str(err)}) from err
    except (SessionBusy, NotRunning) as err:
        raise refused(session_id, err) from err
    except RuntimeFailure as err:
        raise RequestError.invalid_request({"details": str(err)}) from err


def refused(session_id: str | None, err: Exception) -> RequestError:
    """Invalid request: refused now, may work later. A session live in another
    process says so in the message itself, which is what editors show."""
    if isinstance(err, SessionHeld):
        data = {"sessionId": session_id, "pid": err.holder.pid, "details": str(err)}
        return RequestError(-32600, str(err), data)
    return RequestError.invalid_request({"details": str(err)})


def not_found(session_id: str | None, err: Exception) -> RequestError:
    return RequestError(
        -32002, "Resource not found", {"sessionId": session_id, "details": str(err)}
    )


def _refusal(method: str, kind: str) -> Callable[..., Awaitable[None]]:
    async def refuse(self: Agent, *args: Any, **kwargs: Any) -> None:
        if kind == "request":
            raise RequestError.method_not_found(method)
        log.debug("ignoring notification %s", method)

    return refuse


def refuse_unimplemented(agent: type[object]) -> None:
    """Every route the SDK knows that `agent` (or a class it inherits from, short of
    `acp.Agent`) does not implement refuses explicitly (the unstable ones: providers,
    nes, document sync, mcp tunnelling), including routes a future SDK adds."""
    for attr, member in inspect.getmembers(Agent):
        route = getattr(member, "__route__", None)
        if route is not None and getattr(agent, attr) is member:
            setattr(agent, attr, _refusal(route.method, route.kind))
