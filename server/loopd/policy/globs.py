"""The path globs of rules (`read(GLOB)`, `edit(GLOB)`) and of `[done] protected`,
matched without regular expressions.

An untrusted workspace file may add `deny` and `ask` rules, and the model picks the
paths they are checked against, so neither may be able to stall the policy: a
translation to a Python regular expression backtracks (`*a*a*a*a*a*a*b` against a
long name is billions of steps, under the GIL, for every call). Here a glob is a
tuple of tokens run as a set of positions, one character at a time (Thompson's
construction): at most (path length x glob length) steps, whatever the input.

Syntax: `*` any run within a folder name, `?` one character but `/`, `**/` any
number of folders (none included), `**` elsewhere any run across folders, a
backslash makes the next character literal.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Literal

Op = Literal["char", "one", "star", "deep", "folders"]


@dataclass(frozen=True, slots=True)
class PathGlob:
    tokens: tuple[tuple[Op, str], ...]
    fold: bool

    def match(self, path: str) -> bool:
        """Whether the whole of `path` matches."""
        text = path.lower() if self.fold else path
        states = self._closure({0})
        for c in text:
            states = self._closure(self._step(states, c))
            if not states:
                return False
        return len(self.tokens) in states

    def _step(self, states: set[int], c: str) -> set[int]:
        after: set[int] = set()
        for i in states:
            if i == len(self.tokens):
                continue
            op, want = self.tokens[i]
            match op:
                case "char":
                    if c == want:
                        after.add(i + 1)
                case "one":
                    if c != "/":
                        after.add(i + 1)
                case "star":
                    if c != "/":
                        after.add(i)
                case "deep":
                    after.add(i)
                case "folders":  # (anything ending in "/")?
                    after.add(i)
                    if c == "/":
                        after.add(i + 1)
        return after

    def _closure(self, states: set[int]) -> set[int]:
        """`states` and every position reached by skipping what may match nothing."""
        pending, seen = list(states), set(states)
        while pending:
            i = pending.pop()
            skippable = i < len(self.tokens) and self.tokens[i][0] in ("star", "deep", "folders")
            if skippable and i + 1 not in seen:
                seen.add(i + 1)
                pending.append(i + 1)
        return seen


@functools.lru_cache(maxsize=512)
def path_glob(pattern: str, fold: bool) -> PathGlob:
    tokens: list[tuple[Op, str]] = []
    i = 0
    while i < len(pattern):
        if pattern.startswith("**/", i):
            tokens.append(("folders", ""))
            i += 3
        elif pattern.startswith("**", i):
            tokens.append(("deep", ""))
            i += 2
        elif pattern[i] in "*?":
            tokens.append(("star" if pattern[i] == "*" else "one", ""))
            i += 1
        else:
            if pattern[i] == "\\" and i + 1 < len(pattern):
                i += 1
            literal = pattern[i].lower() if fold else pattern[i]
            tokens += [("char", ch) for ch in literal]  # folded as the path is
            i += 1
    return PathGlob(tuple(tokens), fold)
