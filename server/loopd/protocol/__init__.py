"""loopd's own vocabulary, no I/O: the conversation (messages), what a model is asked
and streams back (model), the events every runtime emits (events, ACP-shaped), the
approval question and its closed set of answers, stop reasons, and the error tree."""
