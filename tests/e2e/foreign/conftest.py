"""The real `loopd acp` running the REAL Claude Code and Codex CLIs (pinned in
tests/clients) against the loopback fake model: Anthropic Messages for Claude,
OpenAI Responses for Codex.

The child loopd finds the CLIs the way a person's would: Claude Code on PATH (the
pinned bin dir goes first), reaching the fake through ANTHROPIC_BASE_URL; Codex as
a `[runtimes.codex]` entry in the user config whose `args` name the fake as its
model provider and whose `env` moves its state outside /tmp. `Cli` hides what
differs between the two: how a tool call is scripted and where a request carries
the conversation.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from loopd.testing.fake_llm import FakeLLMServer, ScriptedCall
from tests.e2e.acp.conftest import Home, home
from tests.e2e.conftest import CLIENTS, anthropic_texts, pinned_binary, responses_texts

__all__ = ["CLAUDE", "CODEX", "Cli", "cli_env", "home", "write_user_config"]

CODEX_MODEL = "gpt-5.5"  # a slug from codex's own catalog, or it drops apply_patch


@dataclass(frozen=True)
class Cli:
    """One foreign CLI as the tests drive it through `loopd acp`."""

    runtime: str
    default_model: str
    touch: Callable[[str], ScriptedCall]  # a tool call that creates the file
    texts: Callable[[dict[str, Any]], list[str]]  # the texts a request body carries


CLAUDE = Cli(
    "claude",
    "sonnet",
    lambda name: ScriptedCall("Bash", {"command": f"touch {name}", "description": "make it"}),
    anthropic_texts,
)
CODEX = Cli(
    "codex",
    CODEX_MODEL,
    lambda name: ScriptedCall("exec_command", {"cmd": f"touch {name}"}),
    responses_texts,
)


def codex_config(fake: FakeLLMServer, codex_home: Path) -> str:
    """The user config that points Codex at the fake Responses endpoint."""
    provider = (
        f'model_providers.fake={{name="fake",base_url={json.dumps(fake.openai_base_url)},'
        'env_key="FAKE_OPENAI_KEY",wire_api="responses"}'
    )
    args = ["-c", 'model_provider="fake"', "-c", provider]
    return (
        "[runtimes.codex]\n"
        'harness = "codex"\n'
        f"models = [{json.dumps(CODEX_MODEL)}]\n"
        f"args = {json.dumps(args)}\n"
        f"env = {{ CODEX_HOME = {json.dumps(str(codex_home))}, "
        'FAKE_OPENAI_KEY = "sk-fake" }\n'
    )


def write_user_config(home: Home, text: str) -> None:
    path = home.root / "config" / "loopd" / "config.toml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def cli_env() -> dict[str, str]:
    """PATH with the pinned CLIs first; Claude Code fails at once on an API error."""
    return {
        "PATH": f"{CLIENTS}{os.pathsep}{os.environ.get('PATH', '/usr/bin:/bin')}",
        "CLAUDE_CODE_MAX_RETRIES": "0",
    }


@pytest.fixture(params=[CLAUDE, CODEX], ids=lambda c: c.runtime)
def cli(request: pytest.FixtureRequest, home: Home, home_cache: Path) -> Cli:
    """Each CLI in turn, installed (or the test skips) and configured in `home`."""
    chosen: Cli = request.param
    pinned_binary(chosen.runtime)
    write_user_config(home, codex_config(home.fake, home_cache))
    return chosen
