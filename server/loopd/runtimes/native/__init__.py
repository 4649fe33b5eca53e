"""The native runtime: loopd's own engine on a provider, with its guarded parts
(`parts`: tools, policy, sandbox, MCP; `held`: its effects held until the prompt's
checkpoint is recorded), its system prompt (`instructions`), its
wiring from the app (`wiring`) and its context in the store (`store`)."""
