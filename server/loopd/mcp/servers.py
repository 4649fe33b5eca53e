"""`McpServers`: a session's MCP servers, connected together, their tools offered.

Servers start concurrently; each request of a server's start (`initialize`, each
page of `tools/list`) gets `McpTimeouts.startup`. A server that cannot start (a
missing command, a crash, no answer, an HTTP error) is left out and said in
`problems`: the session works without it. So is a tool whose namespaced name is
taken, by a built-in tool or by an earlier MCP tool: it is refused, never shadows.
`report()` is the message the person reads. The servers' prompts are listed too
(`loopd.mcp.prompts`); a server whose prompts cannot be listed keeps its tools.

A server may change its tools while the session lives: on its
`notifications/tools/list_changed` its tools are listed again (a task, since the
notice arrives in the transport's reader) and `on_change` hears which went and
which came, under the same naming rules. A call whose answer followed such a notice
returns only once the new list is in (`McpTool.run` awaits `settled`), as does the
start of a turn, which is when the new set is offered: a turn keeps the tools it
started with (`ToolRegistry.swap`). Notices coalesce: a
server has at most one listing of a kind under way and one more pending (which
sees every notice that came meanwhile), so a flood of them costs two listings, and
`settled` waits for those two, never for notices still coming.

Their resources are listed too, as context the person may @-mention
(`loopd.mcp.resources`): `mentions()` for the editor, `resolve` to read the
mentioned ones into a prompt. `notifications/resources/list_changed` lists a
server's resources again, the same way; a prompt is resolved once that is done.
"""

from __future__ import annotations

import asyncio
import functools
import logging
from collections.abc import Awaitable, Callable, Collection, Coroutine, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

from loopd.engine.ports import Clock
from loopd.mcp.client import McpClient, McpTimeouts, McpToolInfo
from loopd.mcp.config import McpServerConfig
from loopd.mcp.prompts import McpPrompt
from loopd.mcp.resources import McpResource, resolve
from loopd.mcp.rpc import McpError
from loopd.mcp.tools import McpTool, tool_name
from loopd.protocol.events import Prompt
from loopd.protocol.wire.shapes import Mention

log = logging.getLogger(__name__)
T = TypeVar("T")  # what a server lists: its tools' or its resources' infos

LIST_CHANGED = "notifications/tools/list_changed"
RESOURCES_CHANGED = "notifications/resources/list_changed"
ToolsChanged = Callable[[Sequence[McpTool], Sequence[McpTool]], None]  # (gone, added)
Relist = Callable[[], Coroutine[Any, Any, None]]  # one server's listing of one kind


def _unheard(gone: Sequence[McpTool], added: Sequence[McpTool]) -> None:
    pass


@dataclass(eq=False)
class McpServers:
    clients: list[McpClient] = field(default_factory=list)
    tools: tuple[McpTool, ...] = ()
    prompts: tuple[McpPrompt, ...] = ()
    resources: tuple[McpResource, ...] = ()
    problems: tuple[str, ...] = ()
    reserved: frozenset[str] = frozenset()
    on_change: ToolsChanged = _unheard
    _relisting: dict[tuple[str, str], asyncio.Task[None]] = field(default_factory=dict)
    _again: set[tuple[str, str]] = field(default_factory=set)  # a notice came meanwhile

    @classmethod
    async def connect(
        cls,
        configs: Sequence[McpServerConfig],
        *,
        reserved: Collection[str],
        cwd: str,
        base_env: Mapping[str, str],
        clock: Clock,
        timeouts: McpTimeouts | None = None,
    ) -> McpServers:
        """Never raises for a server's failure; `reserved` are the built-in names."""
        limits = timeouts or McpTimeouts()
        unique, problems = _unique_names(configs)
        started = await asyncio.gather(
            *(_start(c, cwd=cwd, base_env=base_env, clock=clock, timeouts=limits) for c in unique)
        )
        clients: list[McpClient] = []
        listed: list[tuple[McpClient, list[McpToolInfo]]] = []
        for config, result in zip(unique, started, strict=True):
            if isinstance(result, str):
                problems.append(f"{config.name}: {result}")
            else:
                clients.append(result[0])
                listed.append(result)
        servers = cls(clients, reserved=frozenset(reserved))
        servers.tools, refused = servers._offered(listed, set(reserved))
        (servers.prompts, unlisted), (servers.resources, unread) = await asyncio.gather(
            _prompts(clients), _resources(clients)
        )
        servers.problems = (*problems, *refused, *unlisted, *unread)
        for client in clients:
            client.peer.on_notice = functools.partial(servers._noticed, client)
        return servers

    def _noticed(self, client: McpClient, method: str) -> None:
        relists = {LIST_CHANGED: self._relist_tools, RESOURCES_CHANGED: self._relist_resources}
        relist = relists.get(method)
        if relist is None:
            return
        key = (client.name, method)  # lists of one kind run one after another
        running = self._relisting.get(key)
        if running is not None and not running.done():
            self._again.add(key)  # one listing after this one sees all that came
            return
        self._start(key, functools.partial(relist, client))

    def _start(self, key: tuple[str, str], work: Relist) -> None:
        task = asyncio.create_task(work())
        self._relisting[key] = task
        task.add_done_callback(functools.partial(self._listed, key, work))

    def _listed(self, key: tuple[str, str], work: Relist, task: asyncio.Task[None]) -> None:
        if key in self._again and not task.cancelled():
            self._again.discard(key)
            self._start(key, work)

    async def _relist_tools(self, client: McpClient) -> None:
        infos = await _listed_again(client, "tools", client.list_tools)
        if infos is None:
            return
        gone = tuple(t for t in self.tools if t.client is client)
        kept = tuple(t for t in self.tools if t.client is not client)
        added, refused = self._offered([(client, infos)], {*self.reserved, *(t.name for t in kept)})
        for problem in refused:
            log.warning("mcp %s", problem)
        self.tools = (*kept, *added)
        self.on_change(gone, added)

    async def _relist_resources(self, client: McpClient) -> None:
        infos = await _listed_again(client, "resources", client.list_resources)
        if infos is None:
            return
        others = [r for r in self.resources if r.client is not client]
        fresh = [McpResource(client, info) for info in infos]
        order = {id(c): n for n, c in enumerate(self.clients)}  # servers keep their order
        ranked = sorted((*others, *fresh), key=lambda r: order.get(id(r.client), len(order)))
        self.resources = tuple(ranked)

    def mentions(self) -> tuple[Mention, ...]:
        """The resources the person may mention, server by server."""
        return tuple(r.mention for r in self.resources)

    async def resolve(self, prompt: Prompt) -> Prompt:
        """`prompt` with its mentions of listed resources read in (see
        `loopd.mcp.resources`), once a resource list changed just now is in."""
        await self.settled()
        return await resolve(prompt, self.resources)

    async def settled(self) -> None:
        """Returns once every re-listing under way is done, and the one a notice
        during it asked for: at most two rounds, whatever still comes."""
        for _ in range(2):
            pending = [t for t in self._relisting.values() if not t.done()]
            if not pending:
                return
            await asyncio.gather(*pending, return_exceptions=True)

    def report(self) -> str:
        """What the person is told ("" when every server and tool is there)."""
        if not self.problems:
            return ""
        lines = "\n".join(f"- {p}" for p in self.problems)
        return f"Some MCP servers or tools are not available in this session:\n{lines}\n"

    async def aclose(self) -> None:
        self._again.clear()
        for task in self._relisting.values():
            task.cancel()
        await asyncio.gather(*self._relisting.values(), return_exceptions=True)
        await asyncio.gather(*(c.aclose() for c in self.clients), return_exceptions=True)
        self.clients = []

    def _offered(
        self, listed: Sequence[tuple[McpClient, list[McpToolInfo]]], taken: set[str]
    ) -> tuple[tuple[McpTool, ...], list[str]]:
        tools: list[McpTool] = []
        refused: list[str] = []
        for client, infos in listed:
            for info in infos:
                name = tool_name(client.name, info.name)
                if name in taken:
                    whose = "a built-in tool" if name in self.reserved else "another MCP tool"
                    refused.append(
                        f"{client.name}: tool {info.name!r} is not offered: {whose} is named {name}"
                    )
                    continue
                taken.add(name)
                tools.append(McpTool(name, client, info, self.settled))
        return tuple(tools), refused


def _unique_names(configs: Sequence[McpServerConfig]) -> tuple[list[McpServerConfig], list[str]]:
    seen: set[str] = set()
    unique: list[McpServerConfig] = []
    problems: list[str] = []
    for config in configs:
        if config.name in seen:
            problems.append(f"{config.name}: another server has this name; not started")
        else:
            seen.add(config.name)
            unique.append(config)
    return unique, problems


async def _start(
    config: McpServerConfig,
    *,
    cwd: str,
    base_env: Mapping[str, str],
    clock: Clock,
    timeouts: McpTimeouts,
) -> tuple[McpClient, list[McpToolInfo]] | str:
    """The connected client and its tools, or why the server is left out."""
    try:
        client = await McpClient.connect(
            config, cwd=cwd, base_env=base_env, clock=clock, timeouts=timeouts
        )
    except McpError as err:
        return str(err)
    except Exception as err:
        log.exception("mcp %s: start failed", config.name)
        return f"{type(err).__name__}: {err}"
    try:
        return client, await client.list_tools()
    except Exception as err:
        await client.aclose()
        return f"listing its tools failed: {err}"
    except BaseException:  # the session's open was cancelled: leave nothing running
        await client.aclose()
        raise


async def _resources(clients: Sequence[McpClient]) -> tuple[tuple[McpResource, ...], list[str]]:
    listed = await asyncio.gather(*(c.list_resources() for c in clients), return_exceptions=True)
    resources: list[McpResource] = []
    problems: list[str] = []
    for client, result in zip(clients, listed, strict=True):
        if isinstance(result, BaseException):
            problems.append(f"{client.name}: listing its resources failed: {result}")
        else:
            resources += (McpResource(client, info) for info in result)
    return tuple(resources), problems


async def _prompts(clients: Sequence[McpClient]) -> tuple[tuple[McpPrompt, ...], list[str]]:
    listed = await asyncio.gather(*(c.list_prompts() for c in clients), return_exceptions=True)
    prompts: dict[str, McpPrompt] = {}  # a name taken keeps its first prompt
    problems: list[str] = []
    for client, result in zip(clients, listed, strict=True):
        if isinstance(result, BaseException):
            problems.append(f"{client.name}: listing its prompts failed: {result}")
            continue
        for info in result:
            name = tool_name(client.name, info.name)
            prompts.setdefault(name, McpPrompt(name, client, info))
    return tuple(prompts.values()), problems


async def _listed_again(
    client: McpClient, what: str, listing: Callable[[], Awaitable[list[T]]]
) -> list[T] | None:
    """The server's list of `what` after it said the list changed; None when listing
    failed (logged): what was listed before stays."""
    try:
        return await listing()
    except McpError as err:
        log.warning("mcp %s: listing its changed %s failed: %s", client.name, what, err)
        return None
