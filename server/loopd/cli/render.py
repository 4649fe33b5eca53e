"""What the terminal frontend shows, as text: escaping, colour, diffs, folded output.

Everything a model, a tool or a file supplies passes through `escape` before it
reaches the terminal. A title such as `Edit a.py\\x1b[2K\\rRead a.py` would otherwise
redraw the line and make an approval question lie about what it approves; bidi
controls can reorder a command on screen the same way. Colour is added after
escaping, by loopd only, and only when the stream is a terminal and `NO_COLOR` is
unset (https://no-color.org).
"""

from __future__ import annotations

import difflib
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TextIO

# C0 and C1 controls, DEL, and the Unicode format characters that reorder or hide
# text (bidi embeddings, overrides and isolates, zero-width marks).
_UNSAFE = re.compile(r"[\x00-\x1f\x7f-\x9f\u200b-\u200f\u2028-\u202e\u2060-\u2069\ufeff]")
_KEPT_IN_TEXT = frozenset("\n\t")


def escape(text: str, *, multiline: bool = False) -> str:
    """`text` with every control character written out visibly (`\\x1b`, `\\u202e`).
    With `multiline`, newlines and tabs are kept (prose, command output); a title or
    a command on one line keeps none, so it cannot pretend to end early."""

    def visible(match: re.Match[str]) -> str:
        char = match.group()
        if multiline and char in _KEPT_IN_TEXT:
            return char
        code = ord(char)
        return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"

    return _UNSAFE.sub(visible, text)


def wants_colour(stream: TextIO, env: Mapping[str, str]) -> bool:
    """Colour only for a terminal that is not `dumb`, and never when NO_COLOR is set."""
    if env.get("NO_COLOR") or env.get("TERM") == "dumb":
        return False
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


@dataclass(frozen=True, slots=True)
class Style:
    """SGR colouring that is a no-op when `enabled` is false."""

    enabled: bool = False

    def paint(self, text: str, code: str) -> str:
        return f"\x1b[{code}m{text}\x1b[0m" if self.enabled and text else text

    def red(self, text: str) -> str:
        return self.paint(text, "31")

    def green(self, text: str) -> str:
        return self.paint(text, "32")

    def cyan(self, text: str) -> str:
        return self.paint(text, "36")

    def dim(self, text: str) -> str:
        return self.paint(text, "2")

    def bold(self, text: str) -> str:
        return self.paint(text, "1")


def relative(path: str, root: str) -> str:
    """`path` relative to the workspace root when it is inside it, else as given."""
    try:
        inside = os.path.commonpath([os.path.abspath(path), os.path.abspath(root)])
    except ValueError:
        return path
    if inside != os.path.abspath(root):
        return path
    return os.path.relpath(os.path.abspath(path), os.path.abspath(root))


def diff_text(path: str, old: str | None, new: str, style: Style) -> str:
    """A unified diff of one file, escaped, coloured by line kind when `style` is on.
    `path` is already the name to show (workspace-relative)."""
    shown = escape(path)
    lines = difflib.unified_diff(
        (old or "").splitlines(keepends=True),
        new.splitlines(keepends=True),
        fromfile=f"a/{shown}" if old is not None else "/dev/null",
        tofile=f"b/{shown}",
    )
    out = []
    for line in lines:
        body = escape(line.rstrip("\n"), multiline=False)
        if line.startswith(("+++", "---")):
            out.append(style.bold(body))
        elif line.startswith("@@"):
            out.append(style.cyan(body))
        elif line.startswith("+"):
            out.append(style.green(body))
        elif line.startswith("-"):
            out.append(style.red(body))
        else:
            out.append(body)
    return "".join(f"{line}\n" for line in out)


def tail(text: str, lines: int, style: Style) -> str:
    """The last `lines` lines of `text`, escaped and indented, with a note of how many
    were folded away: command output is read from its end."""
    kept = text.rstrip("\n").splitlines()
    folded = len(kept) - lines
    shown = [f"  {escape(line)}\n" if line.strip() else "\n" for line in kept[-lines:]]
    if folded > 0:
        shown.insert(0, style.dim(f"  … {folded} earlier line{'s' if folded > 1 else ''}\n"))
    return "".join(shown)


def usage_line(
    input_tokens: int, output_tokens: int, cost: tuple[float, str] | None, style: Style
) -> str:
    """`tokens: 1,204 in · 87 out · $0.0042`, the cost only where the runtime reported it."""
    parts = [f"tokens: {input_tokens:,} in", f"{output_tokens:,} out"]
    if cost is not None:
        amount, currency = cost
        parts.append(f"${amount:.4f}" if currency == "USD" else f"{amount:.4f} {currency}")
    return style.dim(" · ".join(parts)) + "\n"
