"""Syntax trees of loopd's modules, for the rule tests that walk them.

CPython 3.11 and 3.12 (before 3.12.3) keep one depth counter for building the
Python objects of a syntax tree, shared by every thread (CPython issue gh-106905). A
thread that builds one while another does (3.11 formats a traceback's carets by
parsing its line; the collector can switch threads mid-build) makes the other raise
`SystemError: AST constructor recursion depth mismatch`. That was seen once in CI,
on 3.11.7, in a walk over every module. Parsing is pure, so that one error is
retried; any other is the test's.
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
