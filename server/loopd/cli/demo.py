"""`loopd demo`: one real turn of the native engine against a scripted model.

Everything except the model is the product: the Anthropic provider over real HTTP
(to the shipped loopback fake), the engine, the tools, the policy, the session store
(in a throwaway data dir) and the terminal frontend. The model's replies are
scripted: read a file, propose an edit (which asks for approval), edit, summarise.
On a terminal the approval is asked for real; without one the demo answers it and
says so.
"""

from __future__ import annotations

import asyncio
import os
import sys
import tempfile
from pathlib import Path

from loopd.cli.prompter import tty_prompter
from loopd.cli.terminal import terminal_link
from loopd.cli.turn import exit_code, run_turn
from loopd.testing.fake_llm import FakeLLMServer
from loopd.testing.llm_script import Reply, ScriptedCall

GREET_BEFORE = 'def greet():\n    print("Hello, world!")\n\n\ngreet()\n'
GREET_AFTER = (
    "import sys\n\n\ndef greet(name):\n"
    '    print(f"Hello, {name}!")\n\n\ngreet(sys.argv[1] if len(sys.argv) > 1 else "world")\n'
)
PROMPT = "Make greet.py greet the person named on the command line."


def demo_script() -> list[Reply]:
    return [
        Reply(
            text="I'll read greet.py first.",
            tool_calls=(ScriptedCall("read", {"path": "greet.py"}),),
        ),
        Reply(
            text="It always greets the world. I'll take the name from the command line.",
            tool_calls=(
                ScriptedCall(
                    "edit",
                    {"path": "greet.py", "old_string": GREET_BEFORE, "new_string": GREET_AFTER},
                ),
            ),
        ),
        Reply(text="Done: `python greet.py Ada` now prints `Hello, Ada!`."),
    ]


def run_demo() -> int:
    err = sys.stderr
    err.write("loopd demo: the model is SCRIPTED (a loopback fake); no API key is used.\n\n")
    with tempfile.TemporaryDirectory(prefix="loopd-demo-") as tmp, FakeLLMServer() as fake:
        workspace = Path(tmp) / "workspace"
        workspace.mkdir()
        (workspace / "greet.py").write_text(GREET_BEFORE)
        fake.script("*", *demo_script())
        env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "HOME": os.environ.get("HOME", tmp),
            "LOOPD_HOME": str(Path(tmp) / "data"),
            "XDG_CONFIG_HOME": str(Path(tmp) / "config"),
            "ANTHROPIC_BASE_URL": fake.base_url,
            "ANTHROPIC_API_KEY": "demo-key",
        }
        prompter = tty_prompter()
        link = terminal_link(
            str(workspace),
            prompter,
            assume_yes=prompter is None,
            yes_because="no terminal to ask, so the demo says yes",
        )
        err.write(f"workspace: {workspace}\nprompt: {PROMPT}\n\n")
        outcome = asyncio.run(run_turn(env, str(workspace), PROMPT, link, None, {}))
        err.write(f"\nstop reason: {outcome.stop_reason}\n--- greet.py now ---\n")
        err.write((workspace / "greet.py").read_text())
    return exit_code(outcome)
