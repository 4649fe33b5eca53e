"""What `loopd catalog [--json]` and `loopd doctor` print."""

from __future__ import annotations

import json

from loopd.catalog import (
    AgentScope,
    ModelOption,
    ProviderRef,
    RuntimeCatalog,
    RuntimeEntry,
    Skipped,
    catalog_to_json,
    catalog_to_text,
)
from loopd.config import Harness, ProviderKind


def sample() -> RuntimeCatalog:
    native = RuntimeEntry(
        name="anthropic",
        harness=Harness.NATIVE,
        credential="api_key",
        provider=ProviderRef(
            kind=ProviderKind.ANTHROPIC,
            base_url="https://user:pw@api.anthropic.com",
            api_key_env="ANTHROPIC_API_KEY",
        ),
        models=(ModelOption(id="claude-sonnet-4-5", aliases=("sonnet",)), ModelOption(id="x")),
        default_model="sonnet",
        efforts=("off", "high"),
        default_effort="off",
    )
    codex = RuntimeEntry(
        name="codex",
        harness=Harness.CODEX,
        source="discovered",
        credential="cli_login",
        selection="harness_managed",
        command="/usr/bin/codex",
        version="0.171.0",
        env={"OPENAI_API_KEY": "sk-live"},
    )
    return RuntimeCatalog((codex, native), default="anthropic")


SKIPPED = (Skipped("claude", "command 'claude' not found"),)


def test_json_carries_entries_default_digest_and_skipped() -> None:
    catalog = sample()
    data = catalog_to_json(catalog, SKIPPED)
    assert json.loads(json.dumps(data)) == data
    assert (data["default"], data["digest"]) == ("anthropic", catalog.digest)
    assert [e["name"] for e in data["entries"]] == ["anthropic", "codex"]
    codex = data["entries"][1]
    assert (codex["selection"], codex["version"], codex["models"]) == (
        "harness_managed",
        "0.171.0",
        [],
    )
    assert codex["env_keys"] == ["OPENAI_API_KEY"]
    assert data["entries"][0]["models"][0] == {
        "id": "claude-sonnet-4-5",
        "aliases": ["sonnet"],
        "description": "",
        "context_window": None,
        "source": None,
        "credential": None,
        "targets": {},
    }
    assert data["skipped"] == [{"name": "claude", "reason": "command 'claude' not found"}]
    text = json.dumps(data)
    assert "sk-live" not in text and "pw@" not in text


def test_text_is_a_table_with_the_default_marked() -> None:
    catalog = sample()
    text = catalog_to_text(catalog, SKIPPED)
    lines = text.splitlines()
    assert lines[0].split() == ["RUNTIME", "HARNESS", "SOURCE", "MODELS", "EFFORTS", "DETAILS"]
    assert lines[1].startswith("anthropic *")
    assert "claude-sonnet-4-5*, x" in lines[1] and "off*, high" in lines[1]
    assert "anthropic https://api.anthropic.com key $ANTHROPIC_API_KEY" in lines[1]
    assert lines[2].startswith("codex ") and "(chosen by the CLI)" in lines[2]
    assert "/usr/bin/codex (0.171.0)" in lines[2]
    assert lines[1].index("native") == lines[0].index("HARNESS")  # columns line up
    assert "skipped claude: command 'claude' not found" in lines
    assert lines[-1] == f"digest {catalog.digest}"
    assert "sk-live" not in text and "pw@" not in text


def test_text_for_an_empty_catalog_says_so_and_what_to_set() -> None:
    first = catalog_to_text(RuntimeCatalog()).splitlines()[0]
    assert first.startswith("no runtimes available: run `loopd login`; or set ANTHROPIC_API_KEY")
    assert "[providers.NAME]" in first and "claude or codex CLI on PATH" in first


def test_both_renderings_show_each_agent_and_its_entries() -> None:
    base = sample()
    roles = (
        AgentScope(name="explore", runtimes=("anthropic",), model="x"),
        AgentScope(name="reviewer", runtimes=("anthropic",), default="anthropic", effort="high"),
    )
    catalog = RuntimeCatalog(base.entries, base.default, roles)
    agents = catalog_to_json(catalog)["agents"]
    assert [a["name"] for a in agents] == ["explore", "main", "reviewer"]
    assert agents[1] == {
        "name": "main",
        "runtimes": ["anthropic", "codex"],
        "default": "anthropic",
        "model": None,
        "effort": None,
    }
    lines = catalog_to_text(catalog).splitlines()
    start = lines.index("") + 1
    assert lines[start].split() == ["AGENT", "DEFAULT", "RUNTIMES"]
    assert lines[start + 1].split() == [
        "explore",
        "(the",
        "session's",
        "runtime)",
        "(x)",
        "anthropic",
    ]
    assert lines[start + 2].split() == ["main", "anthropic", "anthropic,", "codex"]
    assert lines[start + 3].split() == ["reviewer", "anthropic", "(high)", "anthropic"]
