"""The one reader by construction: a module of loopd that reads a file any other way
than through `loopd.protocol.reading.FileReader` (or the file tools' `FileAccess`,
awaited) fails this test, unless it is listed below with why it is not reading a
workspace's or a home's files.

The rule walks the syntax tree of every module under `server/loopd` and refuses:
`read_text`/`read_bytes` (pathlib's, sync; the awaited `FileAccess.read_text` is the
file tools' gated port), the builtin `open` (called, or passed on as a value, as to
`asyncio.to_thread`), the `open` of `os`, `io`, `codecs`, `builtins`, `tokenize`
and the compressed and archive formats' modules, `io.FileIO`, importing any of
those by name (`from os import open`), `<path>.open(...)` called with no arguments,
a mode string or only `open`'s own keywords (pathlib's), and importing the
primitives the reader is built on (`loopd.policy.beneath`'s readers, which know
nothing of secrets).
"""

from __future__ import annotations

import ast
import functools
from collections.abc import Iterator
from pathlib import Path

from tests.unit.syntax import parse

SERVER = Path(__file__).resolve().parents[2] / "server"

ALLOWED = {
    "loopd/policy/beneath.py": "the kernel-side primitive the reader is built on (openat2)",
    "loopd/config/login.py": "loopd's own login in its data dir, checked by fstat (owner, mode)",
    "loopd/sandbox/seccomp.py": "writes the filter it compiled to a fresh private file",
    "loopd/sandbox/landlock_syscalls.py": "O_PATH descriptors for landlock rules (never "
    "read), and its sibling relay.py: loopd's own source, loaded by path",
    "loopd/daemon/place.py": "O_PATH descriptors of the daemon's own folders: never read",
    "loopd/daemon/forward.py": "the forwarder's stdlib-only fast path: its log, /dev/null, the "
    "person's own config (non-blocking, regular files only, bounded)",
    "loopd/daemon/serve.py": "the daemon's own lock file",
    "loopd/daemon/early.py": "the daemon's own initialize answers in its private folder "
    "(stdlib only, on the forwarder's path): no link, regular, this user's, bounded",
    "loopd/cli/prompter.py": "the controlling terminal, /dev/tty",
    "loopd/cli/parser.py": "/dev/null",
    "loopd/cli/demo.py": "the demo's own file in the temporary folder it made",
    "loopd/store/lease.py": "/proc/<pid>/stat of a lease holder",
    "loopd/policy/handover.py": "the editor-write proof: the proven file beneath its root, no "
    "link, read back to compare with what was sent and to put back what it held",
    "loopd/walk.py": "opens folders (O_DIRECTORY) to list them, never a file's bytes",
    "loopd/config/trust/pins.py": "hashes, never shows, what a trusted config runs: non-blocking, "
    "regular files only, bounded",
    "loopd/daemon/unit.py": "its own systemd unit, in the person's config folder",
    "loopd/protocol/wire/export.py": "the checkout's own generated wire files, to compare with "
    "what it renders (a developer's tool, never the workspace)",
    "loopd/sandbox/relay.py": "/dev/null, for the in-sandbox relay's own descriptors",
    "loopd/sandbox/resolve.py": "the kernel's address tables, /proc/net/fib_trie and if_inet6",
    "loopd/tools/processes.py": "/proc of the session's own processes, and their log files",
    "loopd/tools/output.py": "writes a command's kept output",
    "loopd/checkpoints/blobs.py": "loopd's own checkpoint blobs in its data dir, written by it",
    "loopd/checkpoints/restore.py": "creates restored files (a fresh temporary) beneath a root",
    "loopd/checkpoints/scan.py": "directory descriptors to list a walk (O_NOFOLLOW); file "
    "contents go through the reader",
    "loopd/remote/link.py": "the token file the person names (non-blocking, regular, bounded)",
    "loopd/remote/status.py": "`loopd serve`'s own status file in its private folder",
    "loopd/remote/tls.py": "the listener's certificate (its own, or the one named), for its "
    "fingerprint; writes its own key 0600",
    "loopd/remote/token.py": "its own token hash, checked by fstat (owner, mode)",
    "loopd/testing/fake_llm.py": "a shipped fake: reads its own script",
    "loopd/testing/fake_mcp.py": "a shipped fake: appends to the request log a test names",
    "loopd/testing/scripted_acp.py": "a shipped fake: its own script and log",
    "loopd/testing/processes.py": "a shipped test helper: /proc/<pid>/cmdline",
}

MODULES = ("os", "io", "codecs", "builtins", "tokenize", "gzip", "bz2", "lzma", "tarfile")
"""Modules whose `open` opens a file by its path."""
OPENERS = ("open", "FileIO")
"""The names in those modules that open a path (`io.FileIO` is `open` unbuffered)."""
OPEN_KEYWORDS = frozenset({"mode", "buffering", "encoding", "errors", "newline"})
"""The keywords of pathlib's `Path.open`: a call with only these opens a file."""
PRIMITIVES = ("read_bytes_beneath", "read_text_beneath", "read_regular")
"""What the reader is built on: beneath a root, but blind to secrets."""


def reads(tree: ast.AST) -> Iterator[tuple[int, str]]:
    """(line, what) for each way of reading a file the rule refuses in `tree`."""
    awaited = {id(node.value.func) for node in ast.walk(tree) if _awaited_call(node)}
    for node in ast.walk(tree):
        match node:
            case ast.Attribute(attr="read_text" | "read_bytes") if id(node) not in awaited:
                yield node.lineno, f".{node.attr}"
            case ast.Name(id="open", ctx=ast.Load()):
                yield node.lineno, "open()"
            case ast.alias(name=name) if name in PRIMITIVES:
                yield node.lineno, f"import {name}"
            case ast.ImportFrom(module=mod, names=names) if mod in MODULES:
                for alias in names:
                    if alias.name in OPENERS:
                        yield node.lineno, f"from {mod} import {alias.name}"
            case ast.Attribute(value=ast.Name(id=mod), attr=attr) if (
                mod in MODULES and attr in OPENERS
            ):
                yield node.lineno, f"{mod}.{attr}()"
            case ast.Call(func=ast.Attribute(attr="open"), args=args, keywords=keywords) if (
                _pathlib_open(args, keywords)
            ):
                yield node.lineno, ".open()"


def _awaited_call(node: ast.AST) -> bool:
    return isinstance(node, ast.Await) and isinstance(node.value, ast.Call)


def _pathlib_open(args: list[ast.expr], keywords: list[ast.keyword]) -> bool:
    """`path.open()`, `path.open("rb")` or `path.open(mode="rb", encoding=...)`; not
    `factory.open(context)` nor `browser.open(url, new=2)`."""
    if any(keyword.arg not in OPEN_KEYWORDS for keyword in keywords):
        return False
    return not args or (isinstance(args[0], ast.Constant) and isinstance(args[0].value, str))


@functools.cache
def offenders(server: Path = SERVER) -> dict[str, list[tuple[int, str]]]:
    """Each module under `server/loopd` that reads a file a refused way, with where."""
    found: dict[str, list[tuple[int, str]]] = {}
    for path in sorted((server / "loopd").rglob("*.py")):
        name = path.relative_to(server).as_posix()
        hits = list(reads(parse(path.read_text(), name)))
        if hits:
            found[name] = sorted(hits)
    return found


def test_every_read_of_a_file_goes_through_the_one_reader() -> None:
    unlisted = {name: hits for name, hits in offenders().items() if name not in ALLOWED}
    assert unlisted == {}, (
        "read workspace and home files through loopd.protocol.reading.FileReader "
        "(loopd.policy.reading.DiskReader), or list the module in ALLOWED with why "
        f"it reads none: {unlisted}"
    )


def test_every_allowed_module_still_needs_its_entry() -> None:
    assert set(ALLOWED) <= set(offenders()), set(ALLOWED) - set(offenders())


def test_the_rule_sees_each_way_of_reading() -> None:
    source = """
import os, io
from pathlib import Path
async def f(p, files, factory, ctx):
    Path(p).read_text()
    p.read_bytes()
    await asyncio.to_thread(Path(p).read_text)
    open(p)
    os.open(p, os.O_RDONLY)
    io.open(p)
    Path(p).open("rb")
    p.open()
    from loopd.policy.beneath import read_bytes_beneath
    await files.read_text(p)
    await factory.open(ctx)
    Path(p).open(mode="r", encoding="utf-8")
    await asyncio.to_thread(open, p)
    io.FileIO(p)
    from os import open as os_open
    import gzip; gzip.open(p)
    browser.open(p, new=2)
"""
    found = [what for _, what in sorted(reads(parse(source)))]
    assert found == [
        ".read_text",
        ".read_bytes",
        ".read_text",
        "open()",
        "os.open()",
        "io.open()",
        ".open()",
        ".open()",
        "import read_bytes_beneath",
        ".open()",
        "open()",
        "io.FileIO()",
        "from os import open",
        "gzip.open()",
    ]


def test_a_module_planted_with_a_read_is_an_offender(tmp_path: Path) -> None:
    """The walk as it runs on the tree: a new module under `loopd/` beside an allowed
    one is found by its path, whichever way it opens the file."""
    (tmp_path / "loopd" / "new").mkdir(parents=True)
    (tmp_path / "loopd" / "new" / "feature.py").write_text(
        "from pathlib import Path\n\n\ndef f(x):\n"
        "    with Path(x).open(encoding='utf-8') as handle:\n        return handle.read()\n"
    )
    (tmp_path / "loopd" / "new" / "clean.py").write_text(
        "def g(reader, x):\n    return reader.read(x)\n"
    )
    assert offenders(tmp_path) == {"loopd/new/feature.py": [(5, ".open()")]}
