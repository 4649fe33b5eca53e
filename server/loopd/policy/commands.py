"""Reading shell command lines without running them: segments, prefixes, and the
read-only classifier.

The classifier answers one question: can this line run without a question because it
cannot change anything? It says yes only for plain words joined by `&& || ; |`, where
every segment is a known read-only program used in a read-only way. Everything the
tokenizer cannot account for (redirections, `$`, backticks, subshells, backgrounding,
line breaks, backslashes, environment assignments, unbalanced quotes) makes the line
unsafe: a wrong "unsafe" costs one question, a wrong "safe" costs the boundary.

git is only safe when the command is sandboxed: a repository's config, hooks, pager and
fsmonitor can run arbitrary programs even for `git status`.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Callable
from dataclasses import dataclass

OPERATORS = frozenset({"&&", "||", ";", "|"})
# Characters that change meaning in a shell in ways the word splitter cannot see.
_FORBIDDEN_CHARS = frozenset("$`\\\n\r\x00")
_ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*\+?=")
_SUBCOMMAND = re.compile(r"^[A-Za-z][A-Za-z0-9_.:-]*$")

Segment = tuple[str, ...]


def _tokens(command: str) -> list[str] | None:
    lexer = shlex.shlex(command, posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    lexer.commenters = ""
    try:
        return list(lexer)
    except ValueError:
        return None


def split_command(command: str) -> tuple[Segment, ...] | None:
    """The simple commands of a line joined only by `&& || ; |`, or None when the line is
    anything else (redirections, subshells, substitutions, unparseable quoting). Quoted
    operator characters count as operators: that only ever errs towards None."""
    if not command.strip() or any(c in _FORBIDDEN_CHARS for c in command):
        return None
    tokens = _tokens(command)
    if tokens is None:
        return None
    segments: list[Segment] = []
    current: list[str] = []
    for token in tokens:
        if token in OPERATORS:
            if not current:
                return None
            segments.append(tuple(current))
            current = []
        elif token and all(c in "&|;<>()" for c in token):
            return None
        else:
            current.append(token)
    if not current:
        return None
    segments.append(tuple(current))
    return tuple(segments)


def loose_segments(command: str) -> tuple[Segment, ...]:
    """Best-effort segments for matching deny and ask rules: never None, so a rule still
    catches `rm` in a line the strict splitter rejects."""
    tokens = _tokens(command.replace("\n", " ; ")) or command.split()
    segments: list[Segment] = []
    current: list[str] = []
    for token in tokens:
        if token and all(c in "&|;<>()" for c in token):
            if current:
                segments.append(tuple(current))
            current = []
            continue
        current.append(token.lstrip("(`").rstrip(")`"))
    if current:
        segments.append(tuple(current))
    return tuple(seg for seg in segments if seg)


def command_prefix(segment: Segment) -> tuple[Segment, bool]:
    """What an "always" answer about this segment is remembered as, and whether it is a
    prefix: the program and its subcommand for tools that have subcommands (`git push`,
    `npm test`), the exact words for everything else, so that "always allow
    `rm -rf build`" never means every `rm`."""
    if len(segment) >= 2 and segment[0] in SUBCOMMAND_PROGRAMS and _SUBCOMMAND.match(segment[1]):
        return segment[:2], True
    return segment, False


SUBCOMMAND_PROGRAMS = frozenset(
    {
        "git", "npm", "pnpm", "yarn", "bun", "deno", "cargo", "go", "uv", "poetry",
        "pip", "make", "docker", "kubectl", "dotnet", "mvn", "gradle", "just", "rustup",
    }
)  # fmt: skip


# -- the read-only classifier ---------------------------------------------------------


def _always(_args: Segment) -> bool:
    return True


@dataclass(frozen=True, slots=True)
class _Effects:
    """How a program's options that write or run something can be spelled, as its
    option parser reads them (getopt and getopt_long, which most of these use):

    - `short`: option letters. A letter counts wherever it stands in a cluster
      (`-uo FILE`, `-oFILE`): getopt reads letters until one that takes a value, so
      a letter after that one is the value's, and counting it anyway only errs
      towards asking.
    - `long`: option names. Any prefix of one counts (`--out`, `--outp=FILE`:
      getopt_long takes an unambiguous prefix; an ambiguous one fails, so counting
      it costs nothing), with or without a joined `=value`.
    - `words`: whole arguments (find's actions, which no parser abbreviates).

    `--` does not end the scan: what follows it is an operand to the program, and
    judging it as an option only errs towards asking.
    """

    short: str = ""
    long: tuple[str, ...] = ()
    words: frozenset[str] = frozenset()

    def any_in(self, args: Segment) -> bool:
        return any(self._is_effect(arg) for arg in args)

    def _is_effect(self, arg: str) -> bool:
        if arg in self.words:
            return True
        if arg.startswith("--"):
            name = arg.split("=", 1)[0]
            return len(name) > 2 and any(option.startswith(name) for option in self.long)
        return arg.startswith("-") and any(letter in self.short for letter in arg[1:])


def _none_of(effects: _Effects) -> Callable[[Segment], bool]:
    """Safe unless an argument spells one of `effects`."""

    def check(args: Segment) -> bool:
        return not effects.any_in(args)

    return check


def _sed_safe(args: Segment) -> bool:
    """Only `sed -n ADDRp [FILE...]`: printing lines, nothing that writes or executes.
    Every argument after the script is a file: an option there (`-i`, `--in-place`,
    `-e 'w out'`) would still be read as one, since sed permutes its arguments."""
    if len(args) < 2 or args[0] != "-n" or not _SED_PRINT.match(args[1]):
        return False
    return all(a == "-" or not a.startswith("-") for a in args[2:])


def _at_most_one_operand(args: Segment) -> bool:
    """`uniq IN OUT` writes OUT; one operand (or none) only reads. `-` (standard
    input) is an operand, and so is every argument after `--`; an option's separate
    value counts as one too, which only errs towards asking."""
    operands, ended = 0, False
    for arg in args:
        if ended or arg == "-" or not arg.startswith("-"):
            operands += 1
        elif arg == "--":
            ended = True
    return operands <= 1


def _git_safe(args: Segment) -> bool:
    """`git status|diff|log|show|branch` with no global options and no flag that writes
    a file or runs a helper."""
    if not args or args[0] not in _GIT_READ_SUBCOMMANDS:
        return False
    rest = args[1:]
    if _GIT_EFFECTS.any_in(rest):
        return False
    if args[0] == "branch":
        return all(a in _GIT_BRANCH_LISTING for a in rest)
    return True


_FIND_EFFECTS = _Effects(
    words=frozenset(
        {"-exec", "-execdir", "-ok", "-okdir", "-delete", "-fls", "-fprint", "-fprint0", "-fprintf"}
    )
)
_RG_EFFECTS = _Effects("z", ("--pre", "--pre-glob", "--hostname-bin", "--search-zip"))
_SED_PRINT = re.compile(r"^(\d+|\$)(,(\d+|\$))?p$")
_GIT_READ_SUBCOMMANDS = frozenset({"status", "diff", "log", "show", "branch"})
# Global options (`-c`, `-C`, `--paginate`) never pass: only a subcommand may come first.
# git's parse-options takes long prefixes and short clusters as getopt does.
_GIT_EFFECTS = _Effects(
    "oO", ("--output", "--ext-diff", "--textconv", "--exec", "--open-files-in-pager")
)
_GIT_BRANCH_LISTING = frozenset(
    {"-a", "--all", "-r", "--remotes", "-v", "-vv", "--verbose", "--list", "--show-current"}
)

_READ_ONLY_PROGRAMS: dict[str, Callable[[Segment], bool]] = {
    **dict.fromkeys(
        (
            "cat", "cd", "cut", "echo", "expr", "false", "grep", "egrep", "fgrep", "head",
            "id", "ls", "nl", "paste", "pwd", "rev", "seq", "stat", "tail", "tr", "true",
            "uname", "wc", "which", "whoami", "numfmt", "tac", "basename", "dirname",
            "realpath", "readlink", "printf", "du", "df", "cmp", "diff",
            "md5sum", "sha1sum", "sha256sum", "sha512sum",
        ),
        _always,
    ),
    "find": _none_of(_FIND_EFFECTS),
    "rg": _none_of(_RG_EFFECTS),
    "sed": _sed_safe,
    "uniq": _at_most_one_operand,
    "sort": _none_of(_Effects("o", ("--output", "--compress-program"))),
    # -R runs tree again in every folder with `-o 00Tree.html`.
    "tree": _none_of(_Effects("oR", ("--output",))),
    "base64": _none_of(_Effects("o", ("--output",))),
    "file": _none_of(_Effects("C", ("--compile",))),  # writes FILE.mgc
}  # fmt: skip

READ_ONLY_PROGRAMS = frozenset({*_READ_ONLY_PROGRAMS, "git"})
"""Every program the classifier may call read-only (git only in a sandbox)."""


def _segment_safe(segment: Segment, sandboxed: bool) -> bool:
    program, args = segment[0], segment[1:]
    if _ASSIGNMENT.match(program):
        return False
    if program == "git":
        # Two lines on purpose: nothing about git is safe without a sandbox.
        return sandboxed and _git_safe(args)
    check = _READ_ONLY_PROGRAMS.get(program)
    return check is not None and check(args)


def is_safe_command(command: str, sandboxed: bool) -> bool:
    """True only when every segment of the line is a known read-only program used in a
    read-only way. Unparseable means unsafe."""
    segments = split_command(command)
    return segments is not None and all(_segment_safe(s, sandboxed) for s in segments)
