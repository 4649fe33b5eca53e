"""A scripted ACP agent, for tests of loopd as an ACP client (the `acp` runtime).

Run as `python -m loopd.testing.scripted_acp SCRIPT.json`. The script is JSON:

    {"log": "/path/log.jsonl", "turns": [[STEP, ...], ...], "resume": false}

Each prompt plays the next turn's steps in order (the last turn repeats), then ends
with `end_turn`, or `cancelled` when a `session/cancel` came. A child started
again plays from the first turn, or with `resume` from the turn after the last one
any child of this script began (each beginning is logged, `{"turn": N}`). A step is one of:

- `{"call": METHOD, "params": {...}, "as": NAME, "background": false}`: a request to
  the client (loopd), wire params without `sessionId`; a string `"$NAME"` anywhere in
  the params is the `terminalId` an earlier call saved `as` NAME. With `background`
  the request runs alongside the next steps; `{"join": true}` waits for those.
- `{"update": {...}}`: a `session/update` (`"$NAME"` substituted too);
- `{"say": TEXT}`: an agent message chunk (with `"repeat": N`, TEXT N times in the
  one chunk; with `"times": N`, N such chunks: a flood);
- `{"wait_cancel": true}`: wait until the turn is cancelled;
- `{"hang": true}`: never go on, cancelled or not (a child that ignores cancel);
- `{"exit": CODE}`: the agent dies on the spot (a crash).

Every answer is appended to the log as one JSON line, `{"call": METHOD, "result": ...}`
or `{"call": METHOD, "error": {"code", "message", "data"}}`, and so are the client
capabilities loopd sent (`{"initialize": ...}`): the test reads what the agent saw.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import uuid
from pathlib import Path
from typing import Any

from acp import PROTOCOL_VERSION, Agent, RequestError, run_agent
from acp.schema import (
    AgentCapabilities,
    ClientCapabilities,
    Implementation,
    InitializeResponse,
    NewSessionResponse,
    PromptResponse,
)


class ScriptedAgent(Agent):
    def __init__(self, script: dict[str, Any]) -> None:
        self.turns: list[list[dict[str, Any]]] = script["turns"]
        self.log = Path(script["log"])
        self.played = self._begun() if script.get("resume") else 0
        self.saved: dict[str, Any] = {}
        self.cancelled = asyncio.Event()
        self.background: list[asyncio.Task[None]] = []

    def on_connect(self, conn: Any) -> None:
        self.conn = conn

    def _begun(self) -> int:
        """How many turns children of this script began."""
        lines = self.log.read_text().splitlines() if self.log.exists() else []
        return sum(1 for line in lines if line.startswith('{"turn"'))

    def _write(self, entry: dict[str, Any]) -> None:
        with self.log.open("a") as f:
            f.write(json.dumps(entry) + "\n")

    async def initialize(
        self,
        protocol_version: int,
        client_capabilities: ClientCapabilities | None = None,
        client_info: Implementation | None = None,
        **kwargs: Any,
    ) -> InitializeResponse:
        caps = client_capabilities
        dumped = caps.model_dump(mode="json", by_alias=True) if caps is not None else None
        self._write({"initialize": dumped})
        return InitializeResponse(
            protocol_version=PROTOCOL_VERSION, agent_capabilities=AgentCapabilities()
        )

    async def new_session(
        self,
        cwd: str,
        additional_directories: list[str] | None = None,
        mcp_servers: list[Any] | None = None,
        **kwargs: Any,
    ) -> NewSessionResponse:
        return NewSessionResponse(session_id=uuid.uuid4().hex)

    async def cancel(self, session_id: str, **kwargs: Any) -> None:
        self.cancelled.set()

    async def prompt(self, session_id: str, prompt: list[Any], **kwargs: Any) -> PromptResponse:
        self.cancelled.clear()
        steps = self.turns[min(self.played, len(self.turns) - 1)]
        self._write({"turn": self.played})
        self.played += 1
        for step in steps:
            await self._play(session_id, step)
        await self._join()
        return PromptResponse(stop_reason="cancelled" if self.cancelled.is_set() else "end_turn")

    async def _play(self, session_id: str, step: dict[str, Any]) -> None:
        raw = self.conn._conn  # the SDK's JSON-RPC connection: wire params as they are
        if "call" in step:
            call = self._call(session_id, step)
            if step.get("background"):
                self.background.append(asyncio.create_task(call))
            else:
                await call
        elif "update" in step:
            update = self._filled(step["update"])
            await raw.send_notification(
                "session/update", {"sessionId": session_id, "update": update}
            )
        elif "say" in step:
            text = step["say"] * int(step.get("repeat", 1))
            chunk = {"sessionUpdate": "agent_message_chunk",
                     "content": {"type": "text", "text": text}}  # fmt: skip
            for _ in range(int(step.get("times", 1))):
                await raw.send_notification(
                    "session/update", {"sessionId": session_id, "update": chunk}
                )
        elif step.get("wait_cancel"):
            await self.cancelled.wait()
        elif step.get("hang"):
            await asyncio.Event().wait()
        elif step.get("join"):
            await self._join()
        elif "exit" in step:
            os._exit(int(step["exit"]))

    async def _call(self, session_id: str, step: dict[str, Any]) -> None:
        method = step["call"]
        params = {"sessionId": session_id, **self._filled(step.get("params", {}))}
        try:
            result = await self.conn._conn.send_request(method, params)
        except RequestError as err:
            self._write({"call": method, "error": err.to_error_obj()})
            return
        if "as" in step and isinstance(result, dict):
            self.saved[step["as"]] = result.get("terminalId")
        self._write({"call": method, "result": result})

    async def _join(self) -> None:
        tasks, self.background = self.background, []
        await asyncio.gather(*tasks)

    def _filled(self, value: Any) -> Any:
        if isinstance(value, str) and value.startswith("$") and value[1:] in self.saved:
            return self.saved[value[1:]]
        if isinstance(value, dict):
            return {k: self._filled(v) for k, v in value.items()}
        if isinstance(value, list):
            return [self._filled(v) for v in value]
        return value


def main() -> None:
    script = json.loads(Path(sys.argv[1]).read_text())
    asyncio.run(run_agent(ScriptedAgent(script)))  # type: ignore[abstract]


if __name__ == "__main__":
    main()
