"""`loopd acp` over a scripted model, run as a subprocess by the e2e tests.

The script comes from the JSON in `LOOPD_TEST_SCRIPT`:
`{"replies": [{"text": "...", "tools": [[id, name, input]], "hold": true}],
  "ask": ["write"], "hold_tools": false}`; the store lives in `LOOPD_HOME`.
Everything but the model (and the pretend tools) is the production code path.
"""

from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path
from typing import Any

from loopd.acp.server import protect_stdout, serve_stdio
from loopd.engine.ports import Verdict
from loopd.testing.fakes import FakeToolBox, Reply, ScriptedPolicy, ScriptedProvider
from loopd.testing.harness import scripted_manager


def reply(spec: dict[str, Any]) -> Reply:
    return Reply(
        text=spec.get("text", ""),
        tools=[tuple(t) for t in spec.get("tools", [])],
        hold=asyncio.Event() if spec.get("hold") else None,
    )


async def main() -> None:
    out = protect_stdout()
    print("a stray print must not reach the protocol channel")
    script = json.loads(os.environ.get("LOOPD_TEST_SCRIPT", "{}"))
    provider = ScriptedProvider.of(*(reply(r) for r in script.get("replies", [])))
    tools = FakeToolBox(hold=asyncio.Event() if script.get("hold_tools") else None)
    policy = ScriptedPolicy({name: Verdict.ASK for name in script.get("ask", [])})
    manager = scripted_manager(Path(os.environ["LOOPD_HOME"]), provider, tools, policy)
    try:
        await serve_stdio(manager, out)
    finally:
        await manager.shutdown()


if __name__ == "__main__":
    asyncio.run(main())
