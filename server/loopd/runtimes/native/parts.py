"""A native session's guarded parts: its tools, policy, sandbox and MCP servers over
one safety state, composed for each session the native runtime opens.

Like `loopd.app`, this is wiring: it names the concrete tools, policy and sandbox
classes, so the runtime itself only sees the `SessionParts` port. `LazyProbe` runs
the sandbox probe once per process, when the first session needs it.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

from loopd.config import data_dir, load_config
from loopd.context.freshness import FileLog
from loopd.engine.delegate import ChildRuntime
from loopd.engine.done import Criterion, DoneSet
from loopd.engine.loop import random_id
from loopd.engine.ports import Emitter
from loopd.home import home_path
from loopd.mcp import McpError, McpServers
from loopd.policy.decide import RulePolicy
from loopd.policy.grants import CallGrants
from loopd.policy.modes import parse_mode
from loopd.policy.network import NetworkGrant
from loopd.policy.reading import DiskReader
from loopd.policy.rules import RuleSet
from loopd.policy.tiers import Tier
from loopd.protocol.errors import ConfigError, RuntimeFailure
from loopd.protocol.events import AgentMessageChunk, Command, PlanEntry, PlanUpdated, Prompt
from loopd.protocol.turns import UndoReport
from loopd.protocol.wire.shapes import Mention
from loopd.runtimes.base import RuntimeContext
from loopd.sandbox.base import Unsandboxed
from loopd.sandbox.netgate import NetworkGate
from loopd.sandbox.probe import NO_BOUNDARY, Boundary, SandboxProbe, probe_sandbox
from loopd.sandbox.resolve import network_for
from loopd.store.sqlite import outputs_dir
from loopd.tools.access import FileTooLarge, NotText, RoutedFiles
from loopd.tools.criteria import SandboxedDone
from loopd.tools.env import ToolEnv, ToolLimits
from loopd.tools.explore import Explore
from loopd.tools.files import BeneathFiles
from loopd.tools.mentioned import resolve_files
from loopd.tools.registry import ToolRegistry, builtin_tools
from loopd.tools.skills import Skill, SkillShelf


def workspace_done(env: Mapping[str, str], cwd: str) -> DoneSet:
    """The definition of done for a session's workspace, from the config files seen
    from its folder. The criteria are commands: a workspace file's may run only in
    a workspace the person trusted, which `load_config` decides (an untrusted
    workspace file is not read). A file loopd cannot use defines nothing here; the
    error was already shown when loopd started or is shown by `loopd doctor`."""
    try:
        done = load_config(env, Path(cwd)).done
    except ConfigError:
        return DoneSet()
    return DoneSet(
        criteria=tuple(Criterion(c.name, c.command, c.exit_code) for c in done.criteria),
        protected=done.protected,
        enabled=done.enabled,
        timeout_seconds=float(done.timeout_seconds),
        max_stall_cycles=done.max_stall_cycles,
    )


class LazyProbe:
    """The sandbox probe runs once per process (per PATH, where it finds bwrap),
    when the first session needs it or in the background once `start`ed: `loopd
    acp` answers `initialize` before paying for it, and the daemon's editor
    connections share what the first one found."""

    _found: ClassVar[dict[str | None, SandboxProbe]] = {}
    _lock = threading.Lock()

    def __init__(self, env: Mapping[str, str]) -> None:
        self._env = env

    def start(self) -> threading.Thread:
        """Probe now, in a thread: an editor's first session then finds it done, or
        waits only for what is left (at once when this PATH was probed already).
        Its trial commands mostly wait on their processes, so it runs beside the
        rest of the start-up at little cost."""
        thread = threading.Thread(target=self.get, name="loopd-sandbox-probe")
        thread.start()
        return thread

    def get(self) -> SandboxProbe:
        key = self._env.get("PATH")
        with self._lock:  # sessions opening at once share the one probe
            if key not in self._found:
                self._found[key] = probe_sandbox(env=dict(self._env))
            return self._found[key]


def _network_gate(
    boundary: Boundary, tier: Tier, ctx: RuntimeContext, env: Mapping[str, str]
) -> NetworkGate | None:
    """Network by domain for a session, when configured and the tier can confine
    commands to the proxy (elsewhere the network stays off or granted whole)."""
    if boundary.domains is None or not tier.binds_proxy:
        return None
    return NetworkGate(boundary.domains, ctx.approver.approve, ctx.session_id, network_for(env))


NO_SANDBOX = "No OS sandbox was found (see `loopd doctor`): every command asks first"


@dataclass(eq=False)
class GuardedParts:
    """A native session's tools and policy over one safety state: the mode, the
    sandbox chosen for it, the network grant both consult, and the per-call grants
    the policy records and the tools check (the local files open beneath the roots;
    a path the person approved outside them opens only for the call approved).

    The editor's MCP servers are connected while the session opens; their tools join
    the built-in ones and follow the servers' changed lists. What did not start is
    said at the first turn, not at open: an update naming the session must not reach
    the client before the session/new answer does."""

    env: Mapping[str, str]
    probe: SandboxProbe
    grant: NetworkGrant
    tool_env: ToolEnv
    tools: ToolRegistry
    policy: RulePolicy
    mcp: McpServers
    emitter: Emitter
    done: SandboxedDone
    shelf: SkillShelf
    boundary: Boundary
    notice: str = ""  # said at the start of the next turn

    @classmethod
    async def open(
        cls,
        ctx: RuntimeContext,
        mode: str,
        remembered: Mapping[str, Any],
        *,
        env: Mapping[str, str],
        probe: LazyProbe,
        rules: RuleSet,
        child: ChildRuntime,
        shelf: SkillShelf,
        limits: ToolLimits,
        boundary: Boundary = NO_BOUNDARY,
    ) -> GuardedParts:
        found = await asyncio.to_thread(probe.get)  # runs trial commands, once
        grant, parsed = NetworkGrant(), parse_mode(mode)

        async def on_plan(entries: tuple[PlanEntry, ...]) -> None:
            await ctx.emitter.emit(PlanUpdated(entries))

        sandbox = boundary.sandbox(parsed, found, tuple(ctx.roots), grant, env)
        gate = _network_gate(boundary, found.best, ctx, env)
        kept = str(outputs_dir(data_dir(env), ctx.session_id))  # commands' full outputs
        policy = RulePolicy(
            mode=parsed,
            roots=ctx.roots,
            tier=found.best,
            network=grant,
            rules=rules,
            remembered=RuleSet.from_json(remembered),
            home=home_path(env),
            extra_secrets=boundary.private,
            readable=(kept,),
            grants=CallGrants(),
            by_domain=gate is not None,
        )
        tool_env = ToolEnv(
            roots=ctx.roots,
            files=RoutedFiles(ctx.editor_files, BeneathFiles(policy.paths)),
            reader=DiskReader(
                (),
                home=policy.paths.home,
                secrets=policy.paths.extra_secrets,
                exempt=policy.paths.readable,  # the kept outputs, as `read` reads them
            ),
            sandbox=sandbox,
            outside=Unsandboxed(dict(env)),
            grants=policy.grants,
            on_plan=on_plan,
            editor_terminals=ctx.editor_terminals,
            person=ctx.person,
            session_id=ctx.session_id,
            limits=limits,
            outputs_dir=kept,
            home=home_path(env),
            network=gate,
        )
        builtin = builtin_tools()
        explore = Explore(child, builtin, policy)  # without itself
        mcp = await McpServers.connect(
            ctx.mcp_servers,
            reserved={t.name for t in (*builtin, explore)} | {Skill.name},
            cwd=ctx.cwd,
            base_env=env,
            clock=tool_env.clock,
        )
        skill = Skill(shelf.book(ctx))
        tools = ToolRegistry(tool_env, (*builtin, explore, skill, *mcp.tools))
        mcp.on_change = tools.swap
        done = SandboxedDone(tool_env, workspace_done(env, ctx.cwd), search_path=env.get("PATH"))
        parts = (env, found, grant, tool_env, tools, policy, mcp, ctx.emitter, done, shelf)
        return cls(*parts, boundary, mcp.report())

    def set_mode(self, mode: str) -> None:
        parsed = parse_mode(mode)
        self.policy.mode = parsed
        env, roots = self.env, self.tool_env.roots
        self.tool_env.sandbox = self.boundary.sandbox(parsed, self.probe, roots, self.grant, env)

    def remembered(self) -> Mapping[str, Any]:
        return self.policy.remembered.to_json()

    @property
    def containment(self) -> str:
        tier = self.tool_env.sandbox.tier
        return f"Commands run in the {tier} sandbox" if tier != "none" else NO_SANDBOX

    async def begin_turn(self) -> None:
        self.tool_env.changes.begin_turn()
        await self.mcp.settled()  # a tool list changed since the last turn is in
        self.tools.at_turn_start()
        if self.notice:
            notice, self.notice = self.notice, ""
            await self.emitter.emit(AgentMessageChunk(notice, random_id("msg")))

    async def undo(self) -> UndoReport:
        return await self.tool_env.changes.undo(self.tool_env.files)

    def writes(self) -> int:
        return self.tool_env.changes.ledger.seq

    def put_back(self, paths: Sequence[str]) -> None:
        for path in paths:
            self.tool_env.changes.ledger.note(path)

    def forget_reads(self) -> None:
        self.tool_env.reads = FileLog()

    async def changed_files(self) -> list[str]:
        """Each file the agent read, read again through the session's file access
        (the editor's buffer when it has one), and compared with what it saw."""
        files, seen = self.tool_env.files, self.tool_env.reads
        now: dict[str, str | None] = {}
        for path in seen.tracked():
            try:
                now[path] = await files.read_text(path)
            except FileNotFoundError:
                now[path] = None
            except (OSError, ValueError, NotText, FileTooLarge):
                continue  # unreadable just now: not judged
        return seen.changes(now)

    def prompt_commands(self) -> tuple[Command, ...]:
        return tuple(p.command for p in self.mcp.prompts)

    async def expand(self, name: str, text: str) -> Prompt:
        prompt = next(p for p in self.mcp.prompts if p.name == name)
        try:
            return await prompt.expand(text)
        except McpError as err:
            raise RuntimeFailure(str(err)) from err

    def mentions(self) -> tuple[Mention, ...]:
        return self.mcp.mentions()

    async def resolve(self, prompt: Prompt) -> Prompt:
        """Files and folders first, through the read tool's gates (`tools.mentioned`),
        except the links an MCP server offers: those are its to read."""
        offered = frozenset(m.uri for m in self.mcp.mentions())
        prompt = await resolve_files(prompt, self.tool_env, self.policy, offered)
        return await self.mcp.resolve(prompt)

    async def aclose(self) -> None:
        self.shelf.forget(self.tool_env.session_id)
        await self.mcp.aclose()
        await self.tool_env.aclose()
