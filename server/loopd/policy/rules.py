"""Permission rules: what the person wrote in config, and what they answered "always" to.

Syntax (one string per rule, in the `allow`, `ask` and `deny` lists of the user config
and of the workspace `.loopd/config.toml`):

    TOOL                 every call of the tool               bash, edit, *
    TOOL(SPECIFIER)      calls whose command or paths match   bash(git diff:*)

TOOL is a tool name, `*` for every tool, or one of two families: `edit` covers every
tool that writes files (its declared writes), `read` every tool that reads them (its
declared reads). For a command (`bash`), SPECIFIER is either a prefix, `git diff:*`
(the words `git diff`, then anything), or an exact command, `npm test`. For a file tool
it is a path glob: `*` stays within one path segment, `**` spans segments, `?` is one
character, `\\` escapes. A glob is anchored at each session root (`src/**`), at `/`
(`/etc/**`) or at the home directory (`~/.config/**`); a glob with no `/` matches at any
depth under a root (`*.pem`, `.env`).

How a rule meets a call: a deny or ask rule matches when ANY segment of the command, or
ANY declared path, matches it, and it compares paths case-insensitively. An allow rule
matches only when the WHOLE command is covered (every `&& || ; |` segment matched by an
allow rule, or the exact line) and EVERY declared path is covered. So `bash(git
status:*)` never allows `git status && rm -rf ~`, and `deny` always wins.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from loopd.engine.ports import Declaration, Verdict
from loopd.policy.commands import Segment, loose_segments, split_command
from loopd.policy.globs import path_glob
from loopd.protocol.errors import ConfigError

_RULE = re.compile(r"^\s*(?P<tool>\*|[A-Za-z_][A-Za-z0-9_.-]*)\s*(?:\((?P<spec>.*)\))?\s*$", re.S)
_WRITERS = frozenset({"edit", "delete", "move"})
_READERS = frozenset({"read", "search"})


@dataclass(frozen=True, slots=True)
class Rule:
    """One parsed rule. `spec` None means every call of the tool."""

    tool: str
    spec: str | None = None

    @classmethod
    def parse(cls, text: str) -> Rule:
        match = _RULE.match(text)
        if match is None:
            raise ConfigError(f"permission rule {text!r}: expected TOOL or TOOL(SPECIFIER)")
        spec = match["spec"]
        if spec is not None and not spec.strip():
            raise ConfigError(f"permission rule {text!r}: empty specifier")
        return cls(match["tool"].lower(), None if spec is None else spec.strip())

    def __str__(self) -> str:
        return self.tool if self.spec is None else f"{self.tool}({self.spec})"

    def applies_to(self, tool: str, declaration: Declaration) -> bool:
        if self.tool in ("*", tool):
            return True
        if self.tool == "edit":
            return declaration.kind in _WRITERS
        return self.tool == "read" and declaration.kind in _READERS

    def paths_of(self, tool: str, declaration: Declaration) -> tuple[str, ...]:
        """The declared paths this rule speaks about: writes for `edit`, reads for
        `read`, all of them for a rule named after the tool itself."""
        if self.tool == "edit" and tool != "edit":
            return declaration.writes
        if self.tool == "read" and tool != "read":
            return declaration.reads
        return declaration.reads + declaration.writes


@dataclass(frozen=True, slots=True)
class MatchContext:
    """Where relative and `~` globs are anchored."""

    roots: tuple[str, ...]
    home: str


def _words(spec: str) -> tuple[str, ...]:
    try:
        return tuple(shlex.split(spec))
    except ValueError:
        return tuple(spec.split())


def command_matches(spec: str, segment: Segment) -> bool:
    """`PREFIX:*` matches a segment starting with PREFIX's words; anything else must be
    the segment's exact words (shell quoting allowed in the spec)."""
    if spec.endswith(":*"):
        words = _words(spec[:-2])
        return bool(words) and segment[: len(words)] == words
    return segment == _words(spec)


def _anchored(pattern: str, ctx: MatchContext) -> tuple[str, ...]:
    if pattern.startswith("/"):
        return (pattern,)
    if pattern == "~" or pattern.startswith("~/"):
        return (ctx.home.rstrip("/") + pattern[1:],)
    body = pattern if "/" in pattern.rstrip("/") else "**/" + pattern
    return tuple(root.rstrip("/") + "/" + body for root in ctx.roots)


def path_matches(spec: str, path: str, ctx: MatchContext, fold: bool) -> bool:
    """Whether an absolute canonical path matches a rule's glob."""
    return any(path_glob(p, fold).match(path) for p in _anchored(spec, ctx))


def escape_glob(path: str) -> str:
    """A path as a glob that matches exactly it (for remembered decisions)."""
    return re.sub(r"([*?\\])", r"\\\1", path)


@dataclass(frozen=True, slots=True)
class RuleSet:
    """The allow, ask and deny lists, already parsed. Combine sources with `|`."""

    allow: tuple[Rule, ...] = ()
    ask: tuple[Rule, ...] = ()
    deny: tuple[Rule, ...] = ()

    @classmethod
    def parse(
        cls, allow: Iterable[str] = (), ask: Iterable[str] = (), deny: Iterable[str] = ()
    ) -> RuleSet:
        return cls(
            tuple(map(Rule.parse, allow)),
            tuple(map(Rule.parse, ask)),
            tuple(map(Rule.parse, deny)),
        )

    @classmethod
    def from_config(cls, table: Mapping[str, Any]) -> RuleSet:
        """From a `[permissions]` table: `allow`, `ask`, `deny` lists of rule strings."""
        lists: dict[str, list[str]] = {}
        for key in ("allow", "ask", "deny"):
            value = table.get(key, [])
            if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
                raise ConfigError(f"permissions.{key} must be a list of strings")
            lists[key] = value
        unknown = set(table) - {"allow", "ask", "deny"}
        if unknown:
            raise ConfigError(f"permissions: unknown keys {sorted(unknown)}")
        return cls.parse(lists["allow"], lists["ask"], lists["deny"])

    def __or__(self, other: RuleSet) -> RuleSet:
        return RuleSet(self.allow + other.allow, self.ask + other.ask, self.deny + other.deny)

    def rules(self, action: Verdict) -> tuple[Rule, ...]:
        return {"allow": self.allow, "ask": self.ask, "deny": self.deny}[action]

    def to_json(self) -> dict[str, list[str]]:
        return {a.value: [str(r) for r in self.rules(a)] for a in Verdict}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> RuleSet:
        return cls.from_config({k: v for k, v in data.items() if v})


def first_match(
    rules: Sequence[Rule],
    action: Verdict,
    tool: str,
    declaration: Declaration,
    ctx: MatchContext,
) -> Rule | None:
    """The rule that decides `action` for this call, or None. Deny and ask need one
    matching part; allow needs every part covered (see the module docstring)."""
    candidates = [r for r in rules if r.applies_to(tool, declaration)]
    if not candidates:
        return None
    if action is Verdict.ALLOW:
        return _covering(candidates, tool, declaration, ctx)
    for rule in candidates:
        if rule.spec is None or _touches(rule, rule.spec, tool, declaration, ctx):
            return rule
    return None


def _touches(rule: Rule, spec: str, tool: str, decl: Declaration, ctx: MatchContext) -> bool:
    if decl.command is not None:
        line = " ".join(decl.command.split())
        return line == " ".join(spec.split()) or any(
            command_matches(spec, s) for s in loose_segments(decl.command)
        )
    return any(path_matches(spec, p, ctx, fold=True) for p in rule.paths_of(tool, decl))


def _covering(
    rules: Sequence[Rule], tool: str, decl: Declaration, ctx: MatchContext
) -> Rule | None:
    whole = next((r for r in rules if r.spec is None), None)
    if whole is not None:
        return whole
    if decl.command is not None:
        return _covering_command(rules, decl.command)
    needed = set(decl.reads + decl.writes)
    covered: set[str] = set()
    found: Rule | None = None
    for rule in rules:
        hits = {
            p for p in rule.paths_of(tool, decl) if path_matches(rule.spec or "", p, ctx, False)
        }
        if hits:
            covered |= hits
            found = found or rule
    return found if needed and covered >= needed else None


def _covering_command(rules: Sequence[Rule], command: str) -> Rule | None:
    line = " ".join(command.split())
    for rule in rules:
        if rule.spec is not None and line == " ".join(rule.spec.split()):
            return rule
    segments = split_command(command)
    if segments is None:
        return None
    found: Rule | None = None
    for segment in segments:
        found = next((r for r in rules if r.spec and command_matches(r.spec, segment)), None)
        if found is None:
            return None
    return found
