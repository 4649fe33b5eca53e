"""Who runs a session's turns, behind one contract (`runtimes.base`): the native
engine (`native/`), the Claude Code and Codex CLIs driven as children (`foreign/`),
and any ACP agent as a child (`acp/`)."""
