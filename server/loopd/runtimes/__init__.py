"""Who runs a session's turns, behind one contract (`runtimes.base`): the native
engine, and the Claude Code and Codex CLIs driven as children."""
