"""What the terminal frontend shows: escaped, coloured only where asked, folded."""

from __future__ import annotations

import io

import pytest

from loopd.cli.render import Style, diff_text, escape, relative, tail, usage_line, wants_colour


@pytest.mark.parametrize(
    ("raw", "shown"),
    [
        ("plain text", "plain text"),
        ("a\x1b[2Kb", r"a\x1b[2Kb"),  # CSI: erase the line
        ("a\rb", r"a\x0db"),  # return to the start and overwrite
        ("a\x08b", r"a\x08b"),  # backspace
        ("a\x9bb", r"a\x9bb"),  # the one-byte C1 CSI
        ("a\x7fb", r"a\x7fb"),
        ("evil\u202etxt.exe", r"evil\u202etxt.exe"),  # right-to-left override
        ("a\u2066b\u2069", r"a\u2066b\u2069"),  # bidi isolates
        ("zero\u200bwidth", r"zero\u200bwidth"),
        ("line\nnext\ttab", r"line\x0anext\x09tab"),  # a title stays on one line
        ("é ü 漢字 🙂", "é ü 漢字 🙂"),  # printable Unicode is left alone
    ],
)
def test_escape_writes_every_control_character_out(raw: str, shown: str) -> None:
    assert escape(raw) == shown


def test_multiline_text_keeps_newlines_and_tabs_only() -> None:
    assert escape("a\nb\tc\x1b[31m\r", multiline=True) == "a\nb\tc\\x1b[31m\\x0d"


def test_colour_only_on_a_terminal_without_no_color() -> None:
    class Tty(io.StringIO):
        def isatty(self) -> bool:
            return True

    assert wants_colour(Tty(), {})
    assert not wants_colour(Tty(), {"NO_COLOR": "1"})
    assert not wants_colour(Tty(), {"TERM": "dumb"})
    assert not wants_colour(io.StringIO(), {})


def test_a_diff_is_coloured_by_line_kind_and_plain_without_colour() -> None:
    plain = diff_text("src/a.py", "x = 1\n", "x = 2\n", Style(False))
    assert plain.splitlines() == [
        "--- a/src/a.py",
        "+++ b/src/a.py",
        "@@ -1 +1 @@",
        "-x = 1",
        "+x = 2",
    ]
    coloured = diff_text("src/a.py", "x = 1\n", "x = 2\n", Style(True))
    assert "\x1b[31m-x = 1\x1b[0m" in coloured and "\x1b[32m+x = 2\x1b[0m" in coloured


def test_a_diff_escapes_the_file_and_the_path() -> None:
    shown = diff_text("a\x1b[2K.py", None, "ok\x1b]0;title\x07\n", Style(False))
    assert "\x1b" not in shown and "\x07" not in shown
    assert r"+++ b/a\x1b[2K.py" in shown and r"+ok\x1b]0;title\x07" in shown
    assert shown.startswith("--- /dev/null")


def test_paths_inside_the_workspace_are_shown_relative() -> None:
    assert relative("/work/ws/src/a.py", "/work/ws") == "src/a.py"
    assert relative("/work/wsx/a.py", "/work/ws") == "/work/wsx/a.py"
    assert relative("/etc/passwd", "/work/ws") == "/etc/passwd"


def test_long_output_is_folded_to_its_last_lines() -> None:
    text = "\n".join(f"line {n}" for n in range(1, 11)) + "\n"
    assert tail(text, 3, Style(False)) == "  … 7 earlier lines\n  line 8\n  line 9\n  line 10\n"
    assert tail("one\n", 3, Style(False)) == "  one\n"


def test_the_usage_line_shows_cost_only_when_known() -> None:
    assert usage_line(1204, 87, None, Style(False)) == "tokens: 1,204 in · 87 out\n"
    assert usage_line(10, 2, (0.0042, "USD"), Style(False)).endswith("· $0.0042\n")
