"""The LSP frontend (`loopd lsp`): pygls handlers, thin, plus the ACP-shaped `loopd/`
extension for clients that opt in. Sessions come from the same manager and store as
`loopd acp`."""
