"""The ACP frontend (`loopd acp`): a thin adapter from the Agent Client Protocol SDK
to the session manager. Wire types are the SDK's schema models; nothing here decides
anything a session would not decide the same way for an LSP client."""
