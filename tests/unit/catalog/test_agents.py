"""Per-agent entries (seed 001 `EntriesFor`, `Resolve(agent, ...)`, `unknown_agent`):
each role admits its own entries, resolves only within them from its own defaults,
and the digest covers the roles."""

from __future__ import annotations

import dataclasses
import json

import pytest
from test_catalog import claude, codex, native

from loopd.catalog import (
    EXPLORE_AGENT,
    MAIN_AGENT,
    AgentScope,
    InvalidCatalog,
    ModelOption,
    RuntimeCatalog,
    RuntimeIdentity,
    UnknownAgent,
    UnknownHarness,
    UnknownModel,
    UnknownRuntime,
    UnsupportedEffort,
)


def cheap() -> native:  # type: ignore[valid-type]
    """A second native entry that shares the alias `fast` with `anthropic`."""
    return native(
        "cheap",
        models=(
            ModelOption(id="small-1", aliases=("fast",), targets={"high": "small-1-think"}),
            ModelOption(id="small-2"),
        ),
        default_model="small-2",
    )


def explore(**changes: object) -> AgentScope:
    fields: dict[str, object] = {"name": EXPLORE_AGENT, "runtimes": ("cheap", "anthropic")}
    return AgentScope(**{**fields, **changes})  # type: ignore[arg-type]


def catalog_with(*agents: AgentScope, default: str | None = "anthropic") -> RuntimeCatalog:
    return RuntimeCatalog((native(), cheap(), claude(), codex()), default, agents)


# -- scoping ---------------------------------------------------------------------------


def test_entries_for_an_agent_are_only_its_own() -> None:
    catalog = catalog_with(explore(default="cheap"))
    assert [e.name for e in catalog.entries_for(EXPLORE_AGENT)] == ["anthropic", "cheap"]
    main = [e.name for e in catalog.entries_for(MAIN_AGENT)]
    assert main == ["anthropic", "cheap", "claude", "codex"]  # main admits all by default
    assert catalog.entries_for("reviewer") == ()  # never a partial or the global catalog


def test_a_role_resolves_only_among_its_entries() -> None:
    catalog = catalog_with(explore(runtimes=("cheap",), default="cheap"))
    with pytest.raises(UnknownRuntime, match="for agent 'explore'") as caught:
        catalog.resolve("anthropic", agent=EXPLORE_AGENT)
    assert caught.value.kind == "unknown_runtime"
    assert caught.value.available == ("cheap",)
    with pytest.raises(UnknownHarness):
        catalog.resolve("claude", agent=EXPLORE_AGENT)  # a harness it admits no entry of
    assert catalog.resolve("anthropic").runtime == "anthropic"  # the session's agent may
    assert catalog.resolve("claude").runtime == "claude"
    assert catalog.resolve("native", agent=EXPLORE_AGENT).runtime == "cheap"


def test_main_scoped_restricts_what_a_session_may_choose() -> None:
    main = AgentScope(name=MAIN_AGENT, runtimes=("anthropic", "claude"), default="claude")
    catalog = catalog_with(main, default=None)
    assert catalog.default == "claude" and catalog.resolve().runtime == "claude"
    with pytest.raises(UnknownHarness):
        catalog.resolve("codex")  # installed, but not for the session's agent
    with pytest.raises(UnknownRuntime):
        catalog.select("cheap")
    assert catalog.get("cheap") is not None and catalog.names[-1] == "codex"


# -- defaults per agent ----------------------------------------------------------------


def test_each_agent_starts_from_its_own_default() -> None:
    catalog = catalog_with(explore(default="cheap", model="small-1", effort="low"))
    child, session = catalog.resolve(agent=EXPLORE_AGENT), catalog.resolve()
    assert (child.runtime, child.model, child.effort) == ("cheap", "small-1", "low")
    assert (session.runtime, session.model, session.effort) == (
        "anthropic",
        "claude-sonnet-4-5",
        "off",
    )
    assert child.agent == EXPLORE_AGENT and session.agent == MAIN_AGENT


def test_a_role_model_applies_on_its_default_runtime_only() -> None:
    catalog = catalog_with(explore(default="cheap", model="small-1"))
    other = catalog.resolve("anthropic", agent=EXPLORE_AGENT)
    assert other.model == "claude-sonnet-4-5"  # that entry's own default
    assert catalog.resolve("cheap", "small-2", agent=EXPLORE_AGENT).model == "small-2"


def test_a_role_without_a_default_takes_its_model_to_the_runtime_chosen() -> None:
    """Explore with no runtime of its own runs on the session's: the caller names it."""
    catalog = catalog_with(explore(model="fast"))
    with pytest.raises(UnknownRuntime, match="no default runtime is configured for agent"):
        catalog.resolve(agent=EXPLORE_AGENT)
    assert catalog.resolve("anthropic", agent=EXPLORE_AGENT).model == "claude-haiku-4-5"
    assert catalog.resolve("cheap", agent=EXPLORE_AGENT).model == "small-1"


def test_the_role_effort_counts_as_chosen_and_selects_the_target() -> None:
    catalog = catalog_with(explore(default="cheap", model="fast", effort="high"))
    resolved = catalog.resolve(agent=EXPLORE_AGENT)
    assert (resolved.model, resolved.target, resolved.effort_explicit) == (
        "small-1",
        "small-1-think",
        True,
    )


# -- aliases within the scope only -----------------------------------------------------


def test_aliases_resolve_within_the_role_scope_only() -> None:
    catalog = RuntimeCatalog(
        (native(), cheap()),
        "anthropic",
        (AgentScope(name=EXPLORE_AGENT, runtimes=("cheap",), default="cheap"),),
    )
    assert catalog.resolve(model="fast").model == "claude-haiku-4-5"  # main: anthropic's
    assert catalog.resolve(model="fast", agent=EXPLORE_AGENT).model == "small-1"
    with pytest.raises(UnknownModel) as caught:
        catalog.resolve(model="haiku", agent=EXPLORE_AGENT)  # only anthropic offers it
    assert caught.value.runtime == "cheap"


def test_a_role_model_alias_is_stored_as_the_id_of_its_default_runtime() -> None:
    catalog = catalog_with(explore(default="cheap", model="fast"))
    assert catalog.agent(EXPLORE_AGENT).model == "small-1"
    with pytest.raises(UnknownModel):
        catalog_with(explore(default="cheap", model="haiku"))
    with pytest.raises(UnsupportedEffort):
        catalog_with(explore(default="cheap", effort="max"))


# -- unknown agent ---------------------------------------------------------------------


def test_an_unknown_agent_is_its_own_error_kind_and_never_the_catalog() -> None:
    catalog = catalog_with(explore())
    for call in (
        lambda: catalog.resolve(agent="reviewer"),
        lambda: catalog.resolve("anthropic", agent="reviewer"),
        lambda: catalog.select(None, agent="reviewer"),
        lambda: catalog.agent("reviewer"),
    ):
        with pytest.raises(UnknownAgent) as caught:
            call()
        assert caught.value.kind == "unknown_agent"
        assert caught.value.available == (EXPLORE_AGENT, MAIN_AGENT)
    bare = RuntimeCatalog((native(),), "anthropic")  # a catalog with no explore role
    with pytest.raises(UnknownAgent):
        bare.resolve(agent=EXPLORE_AGENT)


# -- validation ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("agents", "field"),
    [
        ((explore(runtimes=("cheap", "gone")),), "runtimes"),
        ((explore(), explore()), "agents"),
        ((AgentScope(name=MAIN_AGENT, runtimes=("cheap",), default="cheap"),), "default"),
    ],
)
def test_roles_must_fit_the_catalog(agents: tuple[AgentScope, ...], field: str) -> None:
    with pytest.raises(InvalidCatalog) as caught:
        catalog_with(*agents)
    assert caught.value.field == field


def test_a_role_is_well_formed() -> None:
    with pytest.raises(InvalidCatalog, match="'claude' is not one of its runtimes"):
        explore(default="claude")
    with pytest.raises(InvalidCatalog, match="names a runtime twice"):
        explore(runtimes=("cheap", "cheap"))
    with pytest.raises(InvalidCatalog, match="name"):
        AgentScope(name="not a name")
    assert explore(runtimes=("cheap", "anthropic")).runtimes == ("anthropic", "cheap")


# -- digest ----------------------------------------------------------------------------


def test_the_digest_covers_the_agent_scoping() -> None:
    base = catalog_with(explore(default="cheap"))
    assert catalog_with(explore(default="cheap")).digest == base.digest
    for changed in (
        catalog_with(explore(runtimes=("cheap",), default="cheap")),
        catalog_with(explore(default="anthropic")),
        catalog_with(explore(default="cheap", model="small-1")),
        catalog_with(explore(default="cheap", effort="high")),
        catalog_with(explore(default="cheap"), AgentScope(name="reviewer", runtimes=("cheap",))),
        catalog_with(),
    ):
        assert changed.digest != base.digest
    reordered = RuntimeCatalog(
        (codex(), claude(), cheap(), native()),
        "anthropic",
        (explore(runtimes=("anthropic", "cheap"), default="cheap"),),
    )
    assert reordered.digest == base.digest  # the order things were given in is not identity
    assert base.to_json()["agents"][0] == {
        "name": EXPLORE_AGENT,
        "runtimes": ["anthropic", "cheap"],
        "default": "cheap",
        "model": None,
        "effort": None,
    }


# -- identity ---------------------------------------------------------


def test_the_identity_records_the_agent_and_older_records_read_as_main() -> None:
    catalog = catalog_with(explore(default="cheap"))
    identity = catalog.resolve(agent=EXPLORE_AGENT).identity()
    stored = json.loads(json.dumps(identity.to_json()))
    assert stored["agent"] == EXPLORE_AGENT
    assert RuntimeIdentity.from_json(stored) == identity
    legacy = {k: v for k, v in catalog.resolve().identity().to_json().items() if k != "agent"}
    assert RuntimeIdentity.from_json(legacy).agent == MAIN_AGENT
    assert dataclasses.replace(identity, agent=MAIN_AGENT) != identity
