"""The agent roles a config gives the catalog: `[agents.*]`, with `[defaults]` and
`[delegate]` as older spellings; what a machine lacks is reported, what is wrong
raises naming the file and key."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest
from test_build import FakeMachine

from loopd.catalog import (
    EXPLORE_AGENT,
    MAIN_AGENT,
    AgentScope,
    CatalogBuild,
    InvalidCatalog,
    Skipped,
    UnknownModel,
    UnknownRuntime,
    UnsupportedEffort,
    build_catalog,
)
from loopd.config import merge_layers, parse_config

FILE = Path("/home/me/.config/loopd/config.toml")

PROVIDERS = """
[providers.main]
kind = "anthropic"
models = ["parent-model"]

[providers.cheap]
kind = "openai_chat"
base_url = "http://127.0.0.1:1/v1"
models = ["small-1", { id = "small-2", aliases = ["kid"] }]

[runtimes.claude-work]
harness = "claude"
"""


def build(text: str, **binaries: str | None) -> CatalogBuild:
    config = parse_config(merge_layers([(FILE, tomllib.loads(PROVIDERS + text))]))
    machine = FakeMachine({f"/usr/bin/{name}": v for name, v in binaries.items()})
    return build_catalog(config, {}, which=machine.which, version_of=machine.version_of)


def test_main_and_explore_always_exist_with_their_documented_scopes() -> None:
    catalog = build("", claude="2.1.0").catalog
    assert [role.name for role in catalog.agents] == [EXPLORE_AGENT, MAIN_AGENT]
    assert catalog.agent(MAIN_AGENT).runtimes == ("cheap", "claude", "claude-work", "main")
    assert catalog.agent(MAIN_AGENT).default == "cheap"  # native first, then by name
    # explore runs loopd's own engine: every native entry, on the session's runtime
    assert catalog.agent(EXPLORE_AGENT) == AgentScope(
        name=EXPLORE_AGENT, runtimes=("cheap", "main")
    )


def test_an_agents_table_scopes_the_role_with_its_defaults() -> None:
    catalog = build(
        '[agents.explore]\nruntimes = ["cheap", "main"]\nmodel = "kid"\neffort = "low"\n'
    ).catalog
    role = catalog.agent(EXPLORE_AGENT)
    assert (role.runtimes, role.default, role.model, role.effort) == (
        ("cheap", "main"),
        "cheap",  # the first it lists
        "small-2",  # the alias, stored as the id
        "low",
    )
    resolved = catalog.resolve(agent=EXPLORE_AGENT)
    assert (resolved.runtime, resolved.model, resolved.effort) == ("cheap", "small-2", "low")


def test_delegate_is_the_older_spelling_and_the_agents_table_wins() -> None:
    older = build('[delegate]\nruntime = "cheap"\nmodel = "kid"\n').catalog
    assert older.agent(EXPLORE_AGENT).default == "cheap"
    assert older.agent(EXPLORE_AGENT).model == "small-2"
    both = build('[delegate]\nruntime = "cheap"\n[agents.explore]\ndefault = "main"\n').catalog
    assert both.agent(EXPLORE_AGENT).default == "main"
    with pytest.raises(UnknownModel, match=r"config\.toml: delegate\.model: .*'kid'"):
        build('[delegate]\nmodel = "kid"\n[agents.explore]\ndefault = "main"\n')


def test_explore_refuses_a_runtime_that_is_not_native() -> None:
    for text, key in (
        ('[agents.explore]\nruntimes = ["cheap", "claude-work"]\n', "agents.explore.runtimes"),
        ('[agents.explore]\ndefault = "claude-work"\n', "agents.explore.default"),
        ('[delegate]\nruntime = "claude"\n', "delegate.runtime"),
    ):
        with pytest.raises(InvalidCatalog, match="is not native") as caught:
            build(text, claude="2.1.0")
        assert (caught.value.where, caught.value.field) == (str(FILE), key)


def test_wrong_role_values_raise_naming_file_and_key() -> None:
    with pytest.raises(UnknownRuntime) as missing:
        build('[agents.explore]\ndefault = "chep"\n')
    assert str(missing.value).startswith(f"{FILE}: agents.explore.default: unknown runtime")
    with pytest.raises(UnknownModel, match=r"agents\.explore\.model"):
        build('[agents.explore]\ndefault = "cheap"\nmodel = "parent-model"\n')
    with pytest.raises(UnsupportedEffort, match=r"agents\.explore\.effort"):
        build('[agents.explore]\ndefault = "cheap"\neffort = "max"\n')
    with pytest.raises(UnknownModel, match=r"agents\.main\.model"):
        build('[agents.main]\ndefault = "cheap"\nmodel = "parent-model"\n')


def test_a_default_this_machine_lacks_is_reported_and_no_default_is_made_up() -> None:
    built = build('[agents.reviewer]\ndefault = "claude-work"\n')  # claude not installed
    assert built.catalog.agent("reviewer").default is None
    (skipped,) = [s for s in built.skipped if s.reason.startswith(f"{FILE}: agents.reviewer")]
    assert skipped.name == "claude-work" and "unknown runtime 'claude-work'" in skipped.reason
    with pytest.raises(UnknownRuntime, match=r"agents\.reviewer\.default"):
        build('[agents.reviewer]\ndefault = "clade-work"\n')  # a name nothing has
    lost = '[runtimes.gone]\nharness = "native"\nprovider = "nowhere"\n'
    with pytest.raises(UnknownRuntime, match=r"agents\.explore\.default: unknown runtime"):
        build(lost + '[agents.explore]\ndefault = "gone"\n')  # never the session's instead


def test_a_runtime_this_machine_lacks_is_reported_and_grants_nothing() -> None:
    built = build('[agents.reviewer]\nruntimes = ["claude-work", "main"]\n')  # no claude
    assert built.catalog.agent("reviewer") == AgentScope(
        name="reviewer", runtimes=("main",), default="main"
    )
    reason = f"{FILE}: agents.reviewer.runtimes: runtime 'claude-work' is not available"
    assert Skipped("claude-work", reason) in built.skipped


def test_the_main_role_limits_what_sessions_may_run_on() -> None:
    catalog = build('[agents.main]\nruntimes = ["main", "claude-work"]\n', claude="2").catalog
    assert catalog.agent(MAIN_AGENT).runtimes == ("claude-work", "main")
    assert catalog.default == "main"  # the first it lists
    assert [e.name for e in catalog.entries_for(MAIN_AGENT)] == ["claude-work", "main"]
    assert "cheap" in catalog.names  # still in the catalog, for other roles
    with pytest.raises(UnknownRuntime):
        catalog.resolve("cheap")


def test_main_takes_defaults_runtime_when_admitted_and_says_when_not() -> None:
    picked = build('[defaults]\nruntime = "main"\nmodel = "parent-model"\n').catalog
    assert picked.default == "main"
    chosen = build('[defaults]\nruntime = "main"\n[agents.main]\ndefault = "cheap"\n').catalog
    assert chosen.default == "cheap"  # the role's own key wins
    built = build('[defaults]\nruntime = "cheap"\n[agents.main]\nruntimes = ["main"]\n')
    assert built.catalog.default == "main"  # the role lists its runtimes: the first
    (skipped,) = [s for s in built.skipped if s.name == "cheap"]
    assert skipped.reason.startswith(f"{FILE}: defaults.runtime: unknown runtime 'cheap'")
    gone = build('[defaults]\nruntime = "gone"\n')
    assert gone.catalog.default is None  # never a runtime the person did not name


def test_the_main_model_becomes_its_default_entry_default() -> None:
    catalog = build('[agents.main]\ndefault = "cheap"\nmodel = "kid"\n').catalog
    assert catalog.get("cheap").default_model == "small-2"  # type: ignore[union-attr]
    assert catalog.resolve().model == "small-2"
    assert catalog.agent(MAIN_AGENT).model is None  # pinned on the entry, not the role


def test_any_role_the_config_names_is_known_and_in_the_digest() -> None:
    plain = build("").catalog
    named = build('[agents.reviewer]\nruntimes = ["main"]\n').catalog
    assert named.agent("reviewer").default == "main"
    assert named.digest != plain.digest
    assert named.entries == plain.entries


def test_a_role_model_without_a_runtime_goes_with_the_session_runtime() -> None:
    """`[delegate] model` alone: explore's model on whatever runtime the session has,
    checked when that runtime is chosen."""
    catalog = build('[delegate]\nmodel = "kid"\n').catalog
    assert catalog.agent(EXPLORE_AGENT) == AgentScope(
        name=EXPLORE_AGENT, runtimes=("cheap", "main"), model="kid"
    )
    assert catalog.resolve("cheap", agent=EXPLORE_AGENT).model == "small-2"
    with pytest.raises(UnknownModel):
        catalog.resolve("main", agent=EXPLORE_AGENT)
