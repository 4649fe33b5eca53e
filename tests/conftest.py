"""The whole suite: the `loopd acp` and `loopd lsp` that tests start serve in their
own process (`LOOPD_DAEMON=off`, as `--no-daemon`) unless the run sets
`LOOPD_DAEMON=on` (`make test` runs the ACP and LSP suites both ways). A daemon a
test starts serves that test's own `LOOPD_HOME` and exits a few seconds after its
last editor, so none outlives the run by long. Set here, in the environment every
child inherits; tests that build an environment from nothing add
`tests.e2e.conftest.serving()`."""

from __future__ import annotations

import os

os.environ.setdefault("LOOPD_DAEMON", "off")
os.environ.setdefault("LOOPD_DAEMON_IDLE", "3")
