"""The session layer: one `SessionManager` that every frontend (ACP, LSP, CLI) is a
thin client of, so a session behaves the same in every editor."""
