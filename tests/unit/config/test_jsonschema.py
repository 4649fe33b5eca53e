"""The JSON Schema `loopd config schema` prints agrees with the parser: both come from
the dataclasses, so a file the parser accepts validates and a key it refuses does
not."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from loopd.config import ConfigFileError, merge_layers, parse_config
from loopd.config.jsonschema import config_json_schema

ROOT = Path(__file__).resolve().parents[3]

EVERY_KEY = """
[defaults]
runtime = "groq"
model = "qwen"
effort = "low"
mode = "accept_edits"

[providers.groq]
kind = "openai_chat"
base_url = "https://api.groq.com/openai/v1"
api_key_env = "GROQ_API_KEY"
description = "Groq"
models = [
  "llama-3.3-70b",
  { id = "qwen-2.5-coder-32b", aliases = ["qwen"], description = "q", context_window = 32768 },
  { id = "qwen-2.5", credential = "none" },
  { id = "qwen-3", targets = { high = "qwen-3-hi" } },
]
default_model = "qwen"
small_model = "llama-3.3-70b"
efforts = ["off", "low"]
default_effort = "off"
open_models = true

[providers.proxy]
kind = "anthropic"
base_url = "https://llm.example/anthropic"
anthropic_version = "2023-06-01"

[runtimes.claude]
harness = "claude"
command = "/opt/claude/bin/claude"
args = ["--verbose"]
env = { CLAUDE_CONFIG_DIR = "/tmp/claude" }
profile = "claude"
description = "Claude Code"

[runtimes.fast]
harness = "native"
provider = "groq"

[limits]
max_iterations = 25
max_tool_calls = 100
max_parallel = 8
max_result_bytes = 100000
max_identical_calls = 3
turn_token_ceiling = 0
turn_cost_ceiling = 2.5
stream_idle_seconds = 30
max_output_chars = 20000
max_shown_chars = 50000

[approvals]
allow = ["read(**)"]
ask = []
deny = ["bash(rm -rf *)"]
timeout_seconds = 600

[sandbox]
allow_unix_sockets = ["/run/postgresql/.s.PGSQL.5432"]
home_readable = ["~/.m2"]
allowed_domains = ["pypi.org", "*.pythonhosted.org", "registry.npmjs.org:443", "[fd00::1]:8080"]
denied_domains = ["evil.pypi.org"]

[delegate]
runtime = "fast"
model = "qwen"

[daemon]
enabled = true
idle_seconds = 600

[checkpoints]
enabled = true
max_bytes = 1073741824
max_file_bytes = 1048576

[agents.explore]
runtimes = ["fast", "groq"]
default = "groq"
model = "llama-3.3-70b"
effort = "low"

[done]
enabled = true
protected = ["tests/**"]
timeout_seconds = 300
max_stall_cycles = 2

[[done.criteria]]
name = "tests"
command = "pytest -q"
exit_code = 0
"""


def parse(text: str) -> Any:
    return parse_config(merge_layers([(Path("c.toml"), tomllib.loads(text))]))


def validate(text: str) -> None:
    jsonschema.Draft202012Validator(config_json_schema()).validate(tomllib.loads(text))


def test_the_schema_is_valid_json_schema() -> None:
    jsonschema.Draft202012Validator.check_schema(config_json_schema())


def test_a_file_using_every_key_parses_and_validates() -> None:
    parse(EVERY_KEY)
    validate(EVERY_KEY)


def test_every_key_the_schema_names_is_used_above() -> None:
    """So the test above covers the whole schema, and a new field needs a line here."""
    named = set()

    def walk(node: Any, key: str = "") -> None:
        if isinstance(node, dict):
            for name, child in node.get("properties", {}).items():
                named.add(name)
                walk(child, name)
            for part in ("additionalProperties", "items"):
                walk(node.get(part))
            for option in node.get("anyOf", []):
                walk(option)

    walk(config_json_schema())
    used = set(re.findall(r"^(\w+) =", EVERY_KEY, re.M)) | {"aliases", "id", "providers"}
    used |= {"context_window", "credential", "targets"}  # inline in a model table
    used |= {"runtimes", "defaults", "limits", "approvals", "delegate", "done", "criteria"}
    used |= {"sandbox", "agents", "daemon", "checkpoints"}
    assert named <= used


def test_the_readme_example_validates() -> None:
    readme = (ROOT / "README.md").read_text()
    example = readme.split("A typical file:\n\n```toml\n", 1)[1].split("```", 1)[0]
    parse(example)
    validate(example)


@pytest.mark.parametrize(
    "text",
    [
        "[defaults]\ncolour = 'red'\n",
        "[defaults]\nmode = 'yolo'\n",
        "[providers.x]\nkind = 'smoke_signals'\n",
        "[providers.x]\nbase_url = 'http://h'\n",  # no kind
        "[runtimes.x]\nharness = 'claude'\nflavour = 1\n",
        "[limits]\nmax_iterations = -1\n",
        "[approvals]\nallow = [1]\n",
        "[agents.explore]\nrunning = 'fast'\n",
        "[agents.explore]\nruntimes = 'fast'\n",
        "[agents.explore]\nruntimes = []\n",
        "[wat]\n",
    ],
)
def test_what_the_parser_refuses_the_schema_refuses(text: str) -> None:
    with pytest.raises(ConfigFileError):
        parse(text)
    with pytest.raises(jsonschema.ValidationError):
        validate(text)
