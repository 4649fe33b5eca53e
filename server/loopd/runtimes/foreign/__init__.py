"""The foreign CLIs as runtimes: Claude Code and Codex, each one long-lived child
spoken to in JSON lines (`jsonl`), under the turn discipline of `runtime`; each
CLI's module owns its protocol, its `*_events` module the mapping of its events."""
