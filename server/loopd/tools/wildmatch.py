"""Git's wildmatch, without regular expressions: the one matcher behind `glob`
patterns and `.gitignore` lines.

Patterns come from a repository or from the model, so matching must not be
something they can turn against loopd. A translation to Python regular expressions
backtracks (one `.gitignore` line took ~21 s per file name, holding the GIL) and a
bad range raises `re.error` at every walk. Here a pattern is a tuple of tokens and
matching is the iterative two-pointer algorithm with one backtrack point per level:
within a name, `*` resumes at the last star; across components, `**` resumes at the
last `**`. That is at most (pattern length x name length) steps per level by
construction, with no recursion, whatever the input. A range given backwards
(`[z-a]`) matches nothing, as in git; an unknown `[:class:]` is a `BadPattern`.

Syntax, within one component: `*` (any run of characters), `?` (one), `[...]` with
`!` or `^` to negate, ranges, `[:alpha:]`-style classes and backslash escapes, and
backslash escapes outside a class. An unclosed `[` is a literal `[`. Across
components: `**` as a whole component spans any number of them (`PathPattern`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Final, Literal, TypeVar

P = TypeVar("P")  # a pattern's item
S = TypeVar("S")  # a subject's


class BadPattern(ValueError):
    """A pattern git itself would not match anything with (an unknown `[:class:]`)."""


@dataclass(frozen=True, slots=True)
class _Star:
    pass


@dataclass(frozen=True, slots=True)
class _Any:
    pass


STAR: Final = _Star()
ANY: Final = _Any()

_NAMED: dict[str, Callable[[str], bool]] = {
    "alnum": lambda c: c.isascii() and c.isalnum(),
    "alpha": lambda c: c.isascii() and c.isalpha(),
    "blank": lambda c: c in " \t",
    "cntrl": lambda c: c.isascii() and not c.isprintable(),
    "digit": lambda c: c in "0123456789",
    "graph": lambda c: c.isascii() and c.isprintable() and c != " ",
    "lower": lambda c: c.isascii() and c.islower(),
    "print": lambda c: c.isascii() and c.isprintable(),
    "punct": lambda c: c.isascii() and c.isprintable() and not c.isalnum() and c != " ",
    "space": lambda c: c in " \t\n\r\f\v",
    "upper": lambda c: c.isascii() and c.isupper(),
    "xdigit": lambda c: c in "0123456789abcdefABCDEF",
}


@dataclass(frozen=True, slots=True)
class CharClass:
    """`[...]`: one character among `ranges` (single characters are ranges of one)
    or `named` classes; any other when `negated`."""

    negated: bool
    ranges: tuple[tuple[str, str], ...]
    named: tuple[str, ...] = ()

    def accepts(self, c: str) -> bool:
        inside = any(lo <= c <= hi for lo, hi in self.ranges) or any(
            _NAMED[n](c) for n in self.named
        )
        return inside is not self.negated


Token = str | _Star | _Any | CharClass
Shape = Literal["is", "ends", "starts", "holds"]


@dataclass(frozen=True, slots=True)
class Component:
    """A pattern for one path component (a name without `/`). `shape` is the common
    case answered by a string method: a plain name, `*.ext`, `prefix*`, `*part*`."""

    tokens: tuple[Token, ...]
    shape: tuple[Shape, str] | None = None

    def match(self, name: str) -> bool:
        if self.shape is not None:
            kind, text = self.shape
            match kind:
                case "is":
                    return name == text
                case "ends":
                    return name.endswith(text)
                case "starts":
                    return name.startswith(text)
                case "holds":
                    return text in name
        return _two_pointer(self.tokens, name, STAR, _one)


def _two_pointer(
    pattern: Sequence[P], subject: Sequence[S], star: P, one: Callable[[P, S], bool]
) -> bool:
    """Whether `subject` matches `pattern`, in which `star` spans any run of items and
    every other item matches one (`one`): the two-pointer walk with its one backtrack
    point, the last star, used within a name (`*`) and across components (`**`)."""
    size = len(pattern)
    p = n = 0
    resume_p, resume_n = -1, 0
    while n < len(subject):
        if p < size and pattern[p] is star:
            resume_p, resume_n = p, n
            p += 1
        elif p < size and one(pattern[p], subject[n]):
            p += 1
            n += 1
        elif resume_p >= 0:  # let the last star take one more item
            resume_n += 1
            p, n = resume_p + 1, resume_n
        else:
            return False
    while p < size and pattern[p] is star:
        p += 1
    return p == size


def _one(token: Token, c: str) -> bool:
    match token:
        case str():
            return token == c
        case _Any():
            return True
        case CharClass():
            return token.accepts(c)
        case _Star():
            return False


@dataclass(frozen=True, slots=True)
class _Deep:
    pass


DEEP: Final = _Deep()  # `**` as a whole component: any number of components
Item = Component | _Deep


def _one_component(item: Item, name: str) -> bool:
    return isinstance(item, Component) and item.match(name)


@dataclass(frozen=True, slots=True)
class PathPattern:
    """A pattern over path components; `DEEP` items span any number of them."""

    items: tuple[Item, ...]

    def match(self, path: Sequence[str]) -> bool:
        items, size = self.items, len(self.items)
        if size == 2 and items[0] is DEEP and isinstance(items[1], Component):
            return bool(path) and items[1].match(path[-1])  # the common unanchored name
        return _two_pointer(items, path, DEEP, _one_component)

    def may_hold(self, directory: Sequence[str]) -> bool:
        """Whether something below `directory` could still match (prunes a walk):
        its components match the pattern's leading ones, up to the first `DEEP`."""
        for i, name in enumerate(directory):
            if i >= len(self.items):
                return False
            item = self.items[i]
            if not isinstance(item, Component):
                return True
            if not item.match(name):
                return False
        return True


def component(text: str) -> Component:
    """The tokens of one component's pattern. Raises `BadPattern`."""
    tokens: list[Token] = []
    i = 0
    while i < len(text):
        c = text[i]
        if c == "\\" and i + 1 < len(text):
            tokens.append(text[i + 1])
            i += 2
            continue
        if c == "*":
            if tokens[-1:] != [STAR]:  # `**` inside a name is one star
                tokens.append(STAR)
        elif c == "?":
            tokens.append(ANY)
        elif c == "[" and (parsed := _char_class(text, i)) is not None:
            cls, i = parsed
            tokens.append(cls)
            continue
        else:
            tokens.append(c)
        i += 1
    return Component(tuple(tokens), _shape(tokens))


def _shape(tokens: list[Token]) -> tuple[Shape, str] | None:
    stars = (tokens[:1] == [STAR], tokens[-1:] == [STAR])
    inner = tokens[stars[0] : len(tokens) - stars[1]] if len(tokens) > 1 else tokens
    if not all(isinstance(t, str) for t in inner) or (tokens == [STAR]):
        return ("starts", "") if tokens == [STAR] else None
    text = "".join(t for t in inner if isinstance(t, str))
    kinds: dict[tuple[bool, bool], Shape] = {
        (False, False): "is", (True, False): "ends", (False, True): "starts", (True, True): "holds"
    }  # fmt: skip
    return kinds[stars], text


def path_pattern(parts: Sequence[str]) -> PathPattern:
    """`parts` (a pattern split at `/`) as a `PathPattern`. Raises `BadPattern`."""
    return PathPattern(tuple(DEEP if part == "**" else component(part) for part in parts))


def _char_class(text: str, start: int) -> tuple[CharClass, int] | None:
    """The class opened at `start` and the index after its `]`; None if unclosed."""
    i = start + 1
    negated = i < len(text) and text[i] in "!^"
    i += negated
    ranges: list[tuple[str, str]] = []
    named: list[str] = []
    first = True
    while i < len(text):
        c = text[i]
        if c == "]" and not first:
            return CharClass(negated, tuple(ranges), tuple(named)), i + 1
        first = False
        if c == "[" and text.startswith("[:", i) and (end := text.find(":]", i + 2)) > 0:
            name = text[i + 2 : end]
            if name not in _NAMED:
                raise BadPattern(f"unknown character class [:{name}:]")
            named.append(name)
            i = end + 2
            continue
        if c == "\\" and i + 1 < len(text):
            i += 1
            c = text[i]
        low, i = c, i + 1
        if i + 1 < len(text) and text[i] == "-" and text[i + 1] != "]":
            high = text[i + 2] if text[i + 1] == "\\" and i + 2 < len(text) else text[i + 1]
            i += 3 if text[i + 1] == "\\" else 2
            ranges.append((low, high))  # backwards: matches nothing, as in git
        else:
            ranges.append((low, low))
    return None
