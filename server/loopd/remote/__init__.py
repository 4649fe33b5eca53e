"""loopd remote: the daemon's sessions over ACP's Streamable HTTP & WebSocket transport.

`loopd serve --listen HOST:PORT` (`loopd.remote.serve`) runs an ASGI app
(`loopd.remote.asgi`) on hypercorn. Each remote ACP connection is handed to the
user's daemon as a forwarder hands an editor's pipes (`loopd.remote.upstream`), so
a remote client gets exactly what a local editor gets: the same shared sessions,
trust, sandbox and policy, with the server's files, commands and credentials. The
server adds only what a network needs: TLS (`loopd.remote.tls`), a bearer token
(`loopd.remote.token`), workspace roots a client may name (`loopd.remote.roots`),
and SSE streams a dropped client can resume without losing or repeating a message
(`loopd.remote.streams`).

`loopd acp --remote URL` (`loopd.remote.bridge`) is the laptop's side: a stdio ACP
agent for any editor, relaying to the server and reconnecting when the network drops.
"""
