"""Nothing from the workspace runs outside the sandbox: every program loopd runs
itself is found by `loopd.executables.find_program`, from absolute PATH entries
only and never beneath a workspace root. Each attack plants a program that leaves a
mark when it runs."""

from __future__ import annotations

import ast
import asyncio
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.unit.syntax import parse
from tooltest import RecordingProgress

import loopd
from loopd.catalog.discovery import discover_catalog
from loopd.config import load_config
from loopd.daemon import unit
from loopd.daemon.unit import NoSystemd
from loopd.engine.ports import ToolCall
from loopd.executables import clean_path, find_program
from loopd.mcp.config import McpServerConfig
from loopd.mcp.rpc import McpError, RpcPeer
from loopd.mcp.stdio import StdioTransport
from loopd.protocol.errors import RuntimeFailure
from loopd.protocol.events import Prompt, TextBlock
from loopd.runtimes.acp.agent import AcpRuntimeFactory, AcpSettings
from loopd.runtimes.base import RuntimeContext
from loopd.runtimes.foreign.claude import ClaudeRuntimeFactory, ClaudeSettings
from loopd.runtimes.foreign.codex import CodexRuntimeFactory, CodexSettings
from loopd.sandbox.base import CommandSpec, Unsandboxed
from loopd.testing.fakes import RecordingEmitter, ScriptedApprover
from loopd.tools import ToolEnv, ToolRegistry
from loopd.tools.env import SystemClock

SYSTEM_PATH = "/usr/local/bin:/usr/bin:/bin"


def plant(folder: Path, name: str) -> Path:
    """An executable `name` in `folder` that leaves `folder/ran-<name>` when run."""
    folder.mkdir(parents=True, exist_ok=True)
    program = folder / name
    program.write_text(f"#!/bin/sh\necho ran > '{folder}/ran-{name}'\n")
    program.chmod(0o755)
    return folder / f"ran-{name}"


def test_no_module_but_the_resolver_looks_programs_up() -> None:
    root = Path(loopd.__file__).parent
    offenders = []
    for source in root.rglob("*.py"):
        tree = parse(source.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            named = isinstance(node, ast.Attribute) and node.attr == "which"
            named = named and isinstance(node.value, ast.Name) and node.value.id == "shutil"
            imported = isinstance(node, ast.ImportFrom) and node.module == "shutil"
            imported = imported and any(a.name == "which" for a in node.names)
            if named or imported:
                offenders.append(f"{source.relative_to(root)}:{node.lineno}")
    assert offenders == [], "look programs up with loopd.executables.find_program"


SPAWNS = frozenset({"run", "Popen", "call", "check_call", "check_output", "create_subprocess_exec"})
PATH_SEARCHING = frozenset(
    {"execvp", "execvpe", "execlp", "execlpe", "spawnvp", "spawnvpe", "spawnlp", "spawnlpe"}
)
SEARCHES_ALLOWED = {
    "sandbox/landlock_syscalls.py": "execs the command inside the sandbox it just set up",
}


def bare_spawns(tree: ast.AST) -> Iterator[tuple[int, str]]:
    """(line, what) for each process started by a bare program name (`["git", ...]`,
    which the kernel's exec looks up on a PATH loopd did not clean) or through a
    PATH-searching `os.exec*p`/`os.spawn*p`."""
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Attribute):
            continue
        if node.func.attr in PATH_SEARCHING:
            yield node.lineno, f"os.{node.func.attr}"
        elif node.func.attr in SPAWNS and node.args:
            first = node.args[0]
            if isinstance(first, ast.List | ast.Tuple) and first.elts:
                first = first.elts[0]
            literal = isinstance(first, ast.Constant) and isinstance(first.value, str)
            if literal and "/" not in first.value:  # type: ignore[attr-defined]
                yield node.lineno, repr(first.value)  # type: ignore[attr-defined]


def test_no_program_is_started_by_a_bare_name() -> None:
    """Not named in the issue: `shutil.which` is one way to search a PATH, the
    kernel's `execvp` another. A program loopd starts is a path `find_program`
    gave (or the interpreter's own `sys.executable`)."""
    root = Path(loopd.__file__).parent
    found = {}
    for source in sorted(root.rglob("*.py")):
        name = source.relative_to(root).as_posix()
        hits = list(bare_spawns(parse(source.read_text(encoding="utf-8"))))
        if hits and name not in SEARCHES_ALLOWED:
            found[name] = hits
    assert found == {}, f"start programs by the path find_program gives: {found}"


def test_the_bare_spawn_rule_sees_each_way() -> None:
    source = """
subprocess.run(["systemctl", "--user"])
subprocess.Popen(("git", "status"))
await asyncio.create_subprocess_exec("rg", "x")
os.execvp(argv[0], argv)
subprocess.run([program, "--user"])
subprocess.run([sys.executable, "-c", "pass"])
subprocess.run(["/usr/bin/env", "true"])
"""
    found = [what for _, what in sorted(bare_spawns(parse(source)))]
    assert found == ["'systemctl'", "'git'", "'rg'", "os.execvp"]


def test_daemon_enable_never_runs_the_folder_s_systemctl(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Another executable, in code newer than the issue: `loopd daemon enable` typed
    # in a repository, with `.` on the person's PATH.
    ws = tmp_path / "ws"
    mark = plant(ws, "systemctl")
    (tmp_path / "bin").mkdir()
    monkeypatch.chdir(ws)
    env = {"PATH": f".:{tmp_path}/bin", "HOME": str(tmp_path / "home")}
    with pytest.raises(NoSystemd, match="not installed"):
        unit.enable(env)
    assert not mark.exists()


@pytest.mark.parametrize("entry", ["", ".", "bin", "{ws}/bin", "{ws}/link"])
def test_a_program_is_never_found_in_the_workspace(tmp_path: Path, entry: str) -> None:
    ws = tmp_path / "ws"
    plant(ws, "rg")
    plant(ws / "bin", "rg")
    (ws / "link").symlink_to(ws / "bin")
    search = f"{entry.format(ws=ws)}:{SYSTEM_PATH}"
    cwd = os.getcwd()
    os.chdir(ws)
    try:
        found = find_program("rg", search, outside=(str(ws),))
    finally:
        os.chdir(cwd)
    assert found is None or not found.startswith(str(ws))
    assert not any(
        p.startswith(str(ws)) or not os.path.isabs(p)
        for p in clean_path(search, (str(ws),)).split(":")
    )


def test_a_program_given_by_path_must_be_absolute_and_outside(tmp_path: Path) -> None:
    plant(tmp_path, "agent")
    assert find_program("./agent", SYSTEM_PATH) is None
    assert find_program(str(tmp_path / "agent"), SYSTEM_PATH, outside=(str(tmp_path),)) is None
    assert find_program(str(tmp_path / "agent"), SYSTEM_PATH) == str(tmp_path / "agent")


async def test_grep_never_runs_the_repositorys_rg(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The instance: a plan-mode read ran ./rg outside the sandbox, key in its env.
    ws = tmp_path / "ws"
    mark = plant(ws, "rg")
    (ws / "notes.txt").write_text("needle\n")
    monkeypatch.chdir(ws)
    monkeypatch.setenv("PATH", f":{ws}:{SYSTEM_PATH}")
    env = ToolEnv(roots=(str(ws),), clock=SystemClock())
    try:
        result = await ToolRegistry(env).run(
            ToolCall("c1", "grep", {"pattern": "needle"}), RecordingProgress()
        )
    finally:
        await env.aclose()
    assert not mark.exists()
    assert "notes.txt:1: needle" in result.output


def test_the_none_tier_runs_the_machines_shell_not_the_repositorys(tmp_path: Path) -> None:
    # Not named in the issue: another executable (bash) in another tier (none),
    # where an approved `bash -c` runs uncontained.
    ws = tmp_path / "ws"
    mark = plant(ws, "bash")
    prepared = Unsandboxed({"PATH": f".:{SYSTEM_PATH}"}).prepare(
        CommandSpec(("bash", "-c", "echo hi"), str(ws), (str(ws),))
    )
    done = subprocess.run(
        prepared.argv, env=dict(prepared.env), cwd=prepared.cwd, capture_output=True, check=False
    )
    assert not mark.exists()
    assert done.stdout == b"hi\n"


async def test_an_mcp_server_is_never_started_from_the_workspace(tmp_path: Path) -> None:
    # Not named in the issue: an editor's MCP stdio server found on a PATH entry
    # inside the workspace.
    ws = tmp_path / "ws"
    mark = plant(ws / "node_modules" / ".bin", "mcp-server")
    config = McpServerConfig("srv", command="mcp-server")
    base = {"PATH": f"{ws}/node_modules/.bin:{SYSTEM_PATH}"}
    with pytest.raises(McpError, match="outside the workspace"):
        await StdioTransport.spawn(None, config, base, str(ws), SystemClock(), 0.1)  # type: ignore[arg-type]
    await asyncio.sleep(0)
    assert not mark.exists()


def _context(ws: Path) -> RuntimeContext:
    return RuntimeContext(
        session_id="s1",
        cwd=str(ws),
        additional_roots=(),
        emitter=RecordingEmitter(),
        approver=ScriptedApprover.of(),
        config={"mode": "ask"},
    )


@pytest.mark.parametrize("cli", ["claude", "codex"])
async def test_a_foreign_cli_is_never_started_from_the_workspace(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, cli: str
) -> None:
    # Not named in the issue: the editor's PATH leads into the repository's
    # node_modules/.bin (direnv, an npm script, a shell hook): its `claude` or `codex`
    # would run outside the sandbox with the person's keys.
    ws = tmp_path / "ws"
    mark = plant(ws / "node_modules" / ".bin", cli)
    (tmp_path / "bin").mkdir()  # the only entry left: nothing else is found
    path = f"{ws}/node_modules/.bin:{tmp_path}/bin"
    monkeypatch.setenv("PATH", path)
    factory = (
        ClaudeRuntimeFactory(ClaudeSettings(inherit={"PATH": path}))
        if cli == "claude"
        else CodexRuntimeFactory(CodexSettings(inherit={"PATH": path}))
    )
    runtime = await factory.open(_context(ws))
    try:
        outcome = await runtime.prompt(Prompt((TextBlock("hi"),)))
    finally:
        await runtime.close()
    assert not mark.exists()
    assert outcome.error is not None and "outside the workspace" in outcome.error


async def test_an_acp_agent_is_never_started_from_the_workspace(tmp_path: Path) -> None:
    # Not named in the issue: a child ACP agent named by the person's config, found
    # on a PATH entry inside the repository.
    ws = tmp_path / "ws"
    mark = plant(ws / "bin", "agent")
    settings = AcpSettings("agent", base_env={"PATH": f"{ws}/bin:{SYSTEM_PATH}"})
    with pytest.raises(RuntimeFailure, match="outside the workspace"):
        await AcpRuntimeFactory("child", settings).open(_context(ws))
    assert not mark.exists()


def node_cli(tmp_path: Path, name: str) -> tuple[Path, Path, str]:
    """A CLI outside the workspace written like a Node one (`#!/usr/bin/env NODE`),
    the repository's `NODE` in its node_modules/.bin, and an editor PATH leading
    there first: (the CLI, the mark the repository's program leaves, the PATH)."""
    ws = tmp_path / "ws"
    mark = plant(ws / "node_modules" / ".bin", "fakenode")
    tools = tmp_path / "tools"
    tools.mkdir()
    cli = tools / name
    cli.write_text("#!/usr/bin/env fakenode\n")
    cli.chmod(0o755)
    return cli, mark, f"{ws}/node_modules/.bin:{tools}:{SYSTEM_PATH}"


async def test_a_node_cli_never_runs_the_repository_s_node(tmp_path: Path) -> None:
    # Not named in the issue: the program loopd found is outside, but it looks its
    # interpreter up on the PATH loopd gives it: Codex's CLI, a child ACP agent such
    # as claude-agent-acp, an MCP server started by npx.
    ws = tmp_path / "ws"
    cli, mark, path = node_cli(tmp_path, "codex")
    codex = await CodexRuntimeFactory(CodexSettings(binary=str(cli), inherit={"PATH": path})).open(
        _context(ws)
    )
    try:
        outcome = await codex.prompt(Prompt((TextBlock("hi"),)))
    finally:
        await codex.close()
    assert outcome.error is not None
    with pytest.raises((RuntimeFailure, ConnectionError)):  # it exits before initialize
        await AcpRuntimeFactory("child", AcpSettings(str(cli), base_env={"PATH": path})).open(
            _context(ws)
        )
    server = McpServerConfig("srv", command=str(cli))
    peer = RpcPeer("srv", SystemClock())
    mcp = await StdioTransport.spawn(peer, server, {"PATH": path}, str(ws), SystemClock(), 0.1)
    await mcp.proc.wait()
    await mcp.aclose()
    assert not mark.exists()


def test_the_catalog_s_version_probe_never_runs_the_repository_s_node(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # `codex --version` at every start: loopd typed in a shell whose PATH (loopd's
    # own, and the editor's) leads into the repository first.
    ws = tmp_path / "ws"
    _, mark, path = node_cli(tmp_path, "codex")
    monkeypatch.setenv("PATH", path)
    env = {"PATH": path, "HOME": str(tmp_path / "home"), "LOOPD_HOME": str(tmp_path / "data")}
    built = discover_catalog(load_config(env, ws), env, str(ws))
    assert any(e.name == "codex" for e in built.catalog.entries)  # found outside, probed
    assert not mark.exists()
