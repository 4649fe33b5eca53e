"""Files and folders the person attaches to a prompt, read in through the read tool's
gates: the boundary holds for context the person gives as it does for the model.

An editor's panel mentions a file as a `resource_link` with a `file://` uri (a line
range as `#L3-7`), a folder the same way, and embeds what only it knows (a selection,
the Problems of a file) as a `resource` whose uri names the file. Each path is
decided before anything of it reaches the model, as a `read` call would be:

- the policy's path rules first (canonical, inside the session's folders, not a
  secret), then its verdict for a `read` of that path (deny rules, remembered
  rejections): anything but an allow is a refusal, since no one is asked about a
  mention: an outside path stays outside even when the read tool could have asked;
- a linked file is read through the session's file access, the read tool's own (the
  editor's buffer when it is open, else beneath the root, no symlink out, bounded);
  a folder is listed one level deep by `loopd.walk`, secrets left out;
- an embedded resource keeps the editor's text only when its file passes the same
  check (a selection of an open `.env` is not sent); one an MCP server filled in
  (`FilledPrompt`) is that server's content, and stays.

A refusal or a failed read replaces the block with a sentence saying so, never an
exception: the turn goes on without that context, and the model knows why.
"""

from __future__ import annotations

import asyncio
import os
import re
import uuid
from dataclasses import replace
from urllib.parse import unquote, urlsplit

from loopd.engine.ports import Declaration, ToolCall, Verdict
from loopd.policy.decide import RulePolicy
from loopd.policy.paths import Unresolvable
from loopd.protocol.events import (
    ContentBlock,
    EmbeddedResourceBlock,
    FilledPrompt,
    Prompt,
    ResourceLinkBlock,
    TextBlock,
)
from loopd.tools.access import FileTooLarge, NotText, PathRefused
from loopd.tools.env import ToolEnv
from loopd.walk import walk

MAX_FOLDER_ENTRIES = 200
_LINES = re.compile(r"^L(\d+)(?:-L?(\d+))?$")


class MentionRefused(Exception):
    """A mentioned path the session may not read; the message says why."""


def file_path(uri: str) -> str | None:
    """The absolute path a `file://` uri names, or None for any other uri."""
    parts = urlsplit(uri)
    if parts.scheme != "file" or parts.netloc not in ("", "localhost"):
        return None
    path = unquote(parts.path)
    return path if os.path.isabs(path) and "\0" not in path else None


def line_range(uri: str) -> tuple[int, int] | None:
    """The 1-based inclusive lines of a `#L3-7` (or `#L3`) fragment, or None."""
    match = _LINES.match(urlsplit(uri).fragment)
    if match is None:
        return None
    first = int(match[1])
    return first, int(match[2] or first)


async def resolve_files(
    prompt: Prompt, env: ToolEnv, policy: RulePolicy, skip: frozenset[str] = frozenset()
) -> Prompt:
    """`prompt` with its file and folder mentions read in or refused (module doc).
    Links in `skip` (another reader's, such as an MCP server's resources) stay."""
    check_embedded = not isinstance(prompt, FilledPrompt)
    blocks: list[ContentBlock] = []
    for block in prompt.blocks:
        blocks.append(await _resolved(block, env, policy, skip, check_embedded))
    return replace(prompt, blocks=tuple(blocks))


async def _resolved(
    block: ContentBlock,
    env: ToolEnv,
    policy: RulePolicy,
    skip: frozenset[str],
    check_embedded: bool,
) -> ContentBlock:
    match block:
        case ResourceLinkBlock(uri, name, _) if uri not in skip and file_path(uri):
            path = file_path(uri) or ""
            try:
                return await _read_in(uri, _admitted(path, env, policy), env)
            except (MentionRefused, OSError, NotText, FileTooLarge) as err:
                return TextBlock(f"[{name} <{uri}> was mentioned but not read: {_why(err)}]")
        case EmbeddedResourceBlock(uri, _, _) if check_embedded and file_path(uri):
            path = file_path(uri) or ""
            try:
                _admitted(path, env, policy)
            except MentionRefused as err:
                return TextBlock(f"[{env.display(path)} was attached but not sent: {err}]")
            return block
        case _:
            return block


def _admitted(path: str, env: ToolEnv, policy: RulePolicy) -> str:
    """The canonical path when a `read` of it would run without asking; else
    `MentionRefused`."""
    try:
        verdict = policy.paths.check_read(path)
    except Unresolvable as err:
        raise MentionRefused(f"refused: {err.strerror}") from None
    if not verdict.ok or verdict.root is None:
        raise MentionRefused(verdict.reason)
    call = ToolCall(f"mention_{uuid.uuid4().hex[:12]}", "read", {"path": verdict.path})
    decision = policy.decide(call, Declaration(f"Read {verdict.path}", "read", (verdict.path,)))
    if decision.verdict is not Verdict.ALLOW:
        raise MentionRefused(decision.reason)
    return verdict.path


async def _read_in(uri: str, path: str, env: ToolEnv) -> ContentBlock:
    try:
        text = await env.files.read_text(path)
    except IsADirectoryError:
        return EmbeddedResourceBlock(uri, await asyncio.to_thread(_listing, path, env))
    lines = line_range(uri)
    if lines is not None:
        first, last = lines
        text = "\n".join(text.splitlines()[first - 1 : last])
    limit = env.limits.read_max_chars
    if len(text) > limit:
        text = text[:limit] + f"\n[... cut: {limit} of {len(text)} characters shown]"
    return EmbeddedResourceBlock(uri, text)


def _listing(path: str, env: ToolEnv) -> str:
    """The folder's entries one level deep (folders end in `/`), without `.git` and
    what the reader withholds wherever it lies (secrets, loopd's own folders)."""
    top = next(walk(path), None)
    if top is None:
        return f"{env.display(path)}: the folder could not be listed"
    names = [f"{d}/" for d in top.dirs if d != ".git"] + list(top.files)
    shown = [n for n in names if env.reader.withheld(os.path.join(path, n.rstrip("/"))) is None]
    lines = [f"Folder {env.display(path)}:", *shown[:MAX_FOLDER_ENTRIES]]
    if len(shown) > MAX_FOLDER_ENTRIES:
        lines.append(f"[... {len(shown) - MAX_FOLDER_ENTRIES} more entries]")
    return "\n".join(lines)


def _why(err: Exception) -> str:
    match err:
        case PathRefused(reason=reason):
            return reason
        case FileNotFoundError():
            return "no such file"
        case NotText():
            return "it is not text"
        case OSError(strerror=str(reason)):
            return reason
        case _:
            return str(err)
