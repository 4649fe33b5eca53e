"""One loopd per user and data dir, behind thin stdio forwarders (gopls's `-remote=auto`).

Editors start `loopd acp` and `loopd lsp` often. By default each is a forwarder
(`loopd.daemon.forward`, standard library only): it finds the daemon serving its
data dir (`LOOPD_HOME`) on a Unix socket in a private folder (`loopd.daemon.place`),
starts one when none answers, and hands it the editor's stdin, stdout and stderr
themselves (SCM_RIGHTS), with its cwd, arguments and environment. The daemon then
reads and writes the editor's pipes directly, byte for byte, and the forwarder only
waits to exit with the connection's status. The daemon (`loopd.daemon.serve`) pays
the imports, the catalog probe and the memory once, and serves every connection
over one session table: a session is live in every editor attached to it.

`--no-daemon` (or `LOOPD_DAEMON=off`, or `[daemon] enabled = false` in the user
config) serves in the editor's own process, as before.
"""
