"""Syntax trees of loopd's modules, for the rule tests that walk them.

CPython 3.11 and 3.12 (before 3.12.3) keep the depth counter for building a syntax
tree's Python objects in the interpreter, not in the call (CPython issue gh-106905).
A second build that starts while one runs leaves the first with `SystemError: AST
constructor recursion depth mismatch`. In a test run that second build comes from a
finalizer the collector runs in the middle: seen in CI on 3.11.7, an asyncio
subprocess transport an earlier test left behind failed in `__del__`, and 3.11
formats that error's traceback carets by parsing its source line. Parsing is pure,
so that one error is retried; any other is the test's.
"""

from __future__ import annotations

import ast

_TRIES = 5


def parse(source: str, filename: str = "<unknown>") -> ast.Module:
    """`ast.parse(source, filename)`, immune to the race above."""
    for attempt in range(_TRIES):
        try:
            return ast.parse(source, filename)
        except SystemError as err:
            if "recursion depth mismatch" not in str(err) or attempt == _TRIES - 1:
                raise
    raise AssertionError("unreachable: the last try returns or raises")
