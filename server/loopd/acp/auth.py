"""Logging in from the editor: one ACP auth method, `loopd login` in a terminal.

loopd has no account of its own: a session needs a model provider's key (or a
logged-in Claude Code / Codex CLI). So the method is a terminal method: the client
relaunches the agent command with `login` as its arguments, the person picks a
provider and pastes a key there, and `authenticate` then reports whether a runtime
is usable now.

A client may show `terminal` methods only when it says it can run them
(`clientCapabilities.auth.terminal`, or the older `_meta["terminal-auth"]` flag);
for any other client the same method is described as an agent method whose
`_meta["terminal-auth"]` names the command, the form clients used before terminal
methods were stabilised. Either way every client sees exactly one way in.
"""

from __future__ import annotations

from acp import RequestError
from acp.schema import AuthMethodAgent, ClientCapabilities, TerminalAuthMethod

LOGIN_METHOD = "loopd-login"
_NAME = "Log in to a model provider"
_DESCRIPTION = (
    "Runs `loopd login` in a terminal: choose Anthropic, OpenAI, an OpenAI-compatible "
    "server, Ollama, or a Claude Code / Codex CLI you are logged in to, and paste a key"
)
LOGIN_ARGS = ("login",)


def offers_terminal_auth(capabilities: ClientCapabilities | None) -> bool:
    if capabilities is None:
        return False
    if capabilities.auth is not None and capabilities.auth.terminal:
        return True
    return bool((capabilities.field_meta or {}).get("terminal-auth"))


def auth_methods(
    capabilities: ClientCapabilities | None,
) -> list[TerminalAuthMethod | AuthMethodAgent]:
    if offers_terminal_auth(capabilities):
        return [
            TerminalAuthMethod(
                id=LOGIN_METHOD, name=_NAME, description=_DESCRIPTION, args=list(LOGIN_ARGS)
            )
        ]
    legacy = {"terminal-auth": {"command": "loopd", "args": list(LOGIN_ARGS), "label": _NAME}}
    return [
        AuthMethodAgent(id=LOGIN_METHOD, name=_NAME, description=_DESCRIPTION, field_meta=legacy)
    ]


def auth_required(details: str, capabilities: ClientCapabilities | None) -> RequestError:
    """ACP's `auth_required` (-32000), naming the ways in."""
    methods = [m.model_dump(by_alias=True, exclude_none=True) for m in auth_methods(capabilities)]
    return RequestError.auth_required({"details": details, "authMethods": methods})
