"""What the model is sent, and how it stays within the model's window.

Pure where it can be: the window a model has (`window`), the token estimate
(`tokens`), which part of a history is kept and which is summarised (`compaction`),
the instruction chain frozen at session start (`instructions`), the read bookmarks
that keep edits from overwriting files the agent has not seen (`freshness`) and the
reminders that carry what changed to the model (`reminders`). The engine drives them;
the runtime layer does their I/O (files, the store) at the edge.
"""
