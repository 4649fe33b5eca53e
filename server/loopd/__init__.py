"""loopd: a coding-agent server for editors (ACP for Zed, LSP for VS Code and Neovim).

When loopd is the program, the folder it started in is taken off `sys.path` before
this package imports anything. `python -m loopd ...` puts that folder first, before
the standard library and every dependency (and an empty PYTHONPATH entry names it
too), and editors start loopd in the workspace folder (VS Code's fallback runs
`-m loopd lsp`): a repository's `typing.py`, `pygls/` or `acp/` would be imported
in place of the real one and run outside any sandbox with the person's keys.
"""

import os as _os
import sys as _sys


def _started_folder_off_the_path() -> None:
    """Drop the start folder from `sys.path` when loopd is the program: `-m` is
    being located (`sys.argv[0]` is "-m" then) or the `loopd` script runs. A
    library import (a test run in a checkout) keeps its path as it is."""
    program = _sys.argv[0] if _sys.argv else ""
    if program != "-m" and _os.path.basename(program) != "loopd":
        return
    try:
        here = _os.getcwd()
    except OSError:  # started in a folder since removed: nothing names it
        return
    _sys.path[:] = [p for p in _sys.path if p not in ("", here)]


_started_folder_off_the_path()

from loopd.sdk_schema import install as _lazy_sdk_schema  # noqa: E402 (after the path)

__version__ = "0.1.0"

_lazy_sdk_schema()  # before anything imports the ACP SDK (see `loopd.sdk_schema`)
