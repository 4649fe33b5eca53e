"""RuntimeCatalog: validation, resolution, digest, defensive copies, identity, scope."""

from __future__ import annotations

import dataclasses
import json
from typing import Any

import pytest

from loopd.catalog import (
    CatalogError,
    InvalidCatalog,
    ModelOption,
    ProviderRef,
    RuntimeCatalog,
    RuntimeEntry,
    RuntimeIdentity,
    UnknownHarness,
    UnknownModel,
    UnknownRuntime,
    UnsupportedEffort,
)
from loopd.catalog.identity import entry_changes
from loopd.config import Harness, ProviderKind
from loopd.protocol.errors import ConfigError


def native(name: str = "anthropic", **changes: Any) -> RuntimeEntry:
    fields: dict[str, Any] = {
        "name": name,
        "harness": Harness.NATIVE,
        "credential": "api_key",
        "provider": ProviderRef(
            kind=ProviderKind.ANTHROPIC,
            base_url="https://api.anthropic.com",
            api_key_env="ANTHROPIC_API_KEY",
        ),
        "models": (
            ModelOption(id="claude-sonnet-4-5", aliases=("sonnet",)),
            ModelOption(id="claude-haiku-4-5", aliases=("haiku", "fast")),
        ),
        "default_model": "sonnet",
        "efforts": ("off", "low", "high"),
        "default_effort": "off",
    }
    return RuntimeEntry(**{**fields, **changes})


def claude(name: str = "claude", **changes: Any) -> RuntimeEntry:
    fields: dict[str, Any] = {
        "name": name,
        "harness": Harness.CLAUDE,
        "source": "discovered",
        "credential": "cli_login",
        "command": "/usr/bin/claude",
        "version": "2.1.197",
        "models": (ModelOption(id="sonnet"), ModelOption(id="opus")),
        "default_model": "sonnet",
        "efforts": ("low", "medium", "high", "max"),
    }
    return RuntimeEntry(**{**fields, **changes})


def codex(name: str = "codex", **changes: Any) -> RuntimeEntry:
    fields: dict[str, Any] = {
        "name": name,
        "harness": Harness.CODEX,
        "source": "discovered",
        "credential": "cli_login",
        "selection": "harness_managed",
        "command": "/usr/bin/codex",
        "efforts": ("minimal", "low", "medium", "high"),
        "default_effort": "medium",
    }
    return RuntimeEntry(**{**fields, **changes})


@pytest.fixture
def catalog() -> RuntimeCatalog:
    return RuntimeCatalog((codex(), native(), claude()), default="anthropic")


# -- resolution ------------------------------------------------------------------------


def test_omitted_selectors_take_the_defaults(catalog: RuntimeCatalog) -> None:
    resolved = catalog.resolve()
    assert (resolved.runtime, resolved.model, resolved.effort) == (
        "anthropic",
        "claude-sonnet-4-5",
        "off",
    )
    assert resolved.harness is Harness.NATIVE
    assert resolved.catalog_digest == catalog.digest


def test_aliases_resolve_to_model_ids(catalog: RuntimeCatalog) -> None:
    assert catalog.resolve(model="fast").model == "claude-haiku-4-5"
    assert catalog.resolve(model="claude-haiku-4-5").model == "claude-haiku-4-5"
    assert catalog.resolve("anthropic", "haiku", "high").effort == "high"


def test_entry_default_model_given_as_alias_is_stored_as_id() -> None:
    assert native(default_model="fast").default_model == "claude-haiku-4-5"


def test_harness_managed_entry_leaves_the_model_to_the_cli(catalog: RuntimeCatalog) -> None:
    resolved = catalog.resolve("codex")
    assert (resolved.model, resolved.effort) == (None, "medium")
    assert resolved.identity().selection == "harness_managed"
    assert catalog.resolve("codex", effort="high").effort == "high"
    with pytest.raises(UnknownModel) as caught:
        catalog.resolve("codex", model="gpt-5")
    assert (caught.value.runtime, caught.value.model) == ("codex", "gpt-5")


def test_entry_without_default_effort_resolves_to_none(catalog: RuntimeCatalog) -> None:
    assert catalog.resolve("claude").effort is None


def test_harness_name_selects_the_first_entry_of_that_harness() -> None:
    catalog = RuntimeCatalog((claude("claude-b"), claude("claude-a"), native()), "anthropic")
    assert catalog.resolve("claude").runtime == "claude-a"
    assert catalog.resolve("native").runtime == "anthropic"


def test_harness_name_prefers_the_default_entry() -> None:
    catalog = RuntimeCatalog((native("a-local"), native("z-remote")), default="z-remote")
    assert catalog.resolve("native").runtime == "z-remote"


def test_an_entry_named_like_a_harness_wins_over_the_harness() -> None:
    catalog = RuntimeCatalog((native("claude"), claude("claude-cli")))
    assert catalog.resolve("claude").harness is Harness.NATIVE


def test_open_models_accept_unlisted_ids_but_not_garbage() -> None:
    entry = native("ollama", models=(), default_model=None, open_models=True)
    catalog = RuntimeCatalog((entry,), default="ollama")
    assert catalog.resolve(model="qwen2.5-coder:7b").model == "qwen2.5-coder:7b"
    with pytest.raises(UnknownModel, match="no default model"):
        catalog.resolve()
    with pytest.raises(UnknownModel):
        catalog.resolve(model="has space")


@pytest.mark.parametrize(
    ("selectors", "error", "fields"),
    [
        (("nope", None, None), UnknownRuntime, {"runtime": "nope"}),
        (("codex-acp", None, None), UnknownRuntime, {"runtime": "codex-acp"}),
        (("acp", None, None), UnknownHarness, {"harness": "acp"}),
        (("anthropic", "gpt-5", None), UnknownModel, {"runtime": "anthropic", "model": "gpt-5"}),
        (("claude", "claude-sonnet-4-5", None), UnknownModel, {"model": "claude-sonnet-4-5"}),
        (("anthropic", None, "max"), UnsupportedEffort, {"effort": "max"}),
        (("codex", None, "xhigh"), UnsupportedEffort, {"runtime": "codex"}),
    ],
)
def test_unknown_selectors_raise_typed_errors(
    catalog: RuntimeCatalog,
    selectors: tuple[str | None, str | None, str | None],
    error: type[CatalogError],
    fields: dict[str, str],
) -> None:
    with pytest.raises(error) as caught:
        catalog.resolve(*selectors)
    for name, value in fields.items():
        assert getattr(caught.value, name) == value
    assert isinstance(caught.value, ConfigError)


def test_errors_list_the_choices_that_exist(catalog: RuntimeCatalog) -> None:
    with pytest.raises(UnknownRuntime) as caught:
        catalog.resolve("nope")
    assert caught.value.available == ("anthropic", "claude", "codex")
    with pytest.raises(UnknownModel) as model_error:
        catalog.resolve("anthropic", "gpt-5")
    assert model_error.value.available == ("claude-sonnet-4-5", "claude-haiku-4-5")
    with pytest.raises(UnsupportedEffort) as effort_error:
        catalog.resolve("anthropic", effort="max")
    assert effort_error.value.allowed == ("off", "low", "high")


def test_no_default_means_the_runtime_must_be_named() -> None:
    catalog = RuntimeCatalog((native(),))
    with pytest.raises(UnknownRuntime) as caught:
        catalog.resolve()
    assert caught.value.runtime is None
    assert catalog.resolve("anthropic").runtime == "anthropic"


def test_empty_catalog_is_valid_and_resolves_nothing() -> None:
    empty = RuntimeCatalog()
    assert len(empty) == 0 and empty.default is None
    with pytest.raises(UnknownRuntime):
        empty.resolve()


# -- validation ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("make", "field"),
    [
        (lambda: native(provider=None), "provider"),
        (lambda: native(command="/bin/x"), "command"),
        (lambda: native(selection="harness_managed", models=(), default_model=None), "selection"),
        (lambda: claude(command=None), "command"),
        (lambda: claude(provider=native().provider), "provider"),
        (lambda: codex(models=(ModelOption(id="gpt-5"),)), "models"),
        (lambda: codex(default_model="gpt-5"), "models"),
        (lambda: native(default_model=None), "default_model"),
        (lambda: native(models=(), default_model=None), "default_model"),
        (lambda: native(default_model="opus"), "default_model"),
        (
            lambda: native(models=(ModelOption(id="a"), ModelOption(id="b", aliases=("a",)))),
            "models",
        ),
        (lambda: native(models=(ModelOption(id="a b"),), default_model="a b"), "models"),
        (
            lambda: native(models=(ModelOption(id="a", aliases=("no way",)),), default_model="a"),
            "models",
        ),
        (lambda: native(efforts=("low", "low")), "efforts"),
        (lambda: native(default_effort="max"), "default_effort"),
        (lambda: native(name="has space"), "name"),
        (lambda: native(profile="a/b"), "profile"),
        (lambda: native(source="somewhere"), "source"),
        (lambda: native(credential="password"), "credential"),
        (lambda: native(selection="auto"), "selection"),
    ],
)
def test_invalid_entries_are_rejected_with_the_field(make: Any, field: str) -> None:
    with pytest.raises(InvalidCatalog) as caught:
        make()
    assert caught.value.field == field


def test_unknown_harness_string_is_a_typed_error() -> None:
    with pytest.raises(UnknownHarness) as caught:
        claude(harness="gemini")
    assert caught.value.harness == "gemini"


def test_harness_given_as_string_is_normalised() -> None:
    entry = claude(harness="claude")
    assert entry.harness is Harness.CLAUDE and entry.profile == "claude"


def test_catalog_rejects_duplicate_names_and_a_missing_default() -> None:
    with pytest.raises(InvalidCatalog, match="two runtimes named"):
        RuntimeCatalog((native(), native()))
    with pytest.raises(UnknownRuntime):
        RuntimeCatalog((native(),), default="claude")


# -- digest ----------------------------------------------------------------------------


def test_digest_ignores_input_order(catalog: RuntimeCatalog) -> None:
    reordered = RuntimeCatalog(tuple(reversed(catalog.entries)), default="anthropic")
    assert reordered.digest == catalog.digest
    assert reordered.entries == catalog.entries
    assert [e.name for e in catalog] == ["anthropic", "claude", "codex"]
    assert catalog.digest.startswith("sha256:") and len(catalog.digest) == 7 + 64


@pytest.mark.parametrize(
    "change",
    [
        {"default_model": "haiku"},
        {"default_effort": "low"},
        {"efforts": ("off", "high", "low")},
        {"models": (ModelOption(id="claude-sonnet-4-5", aliases=("sonnet", "s")),)},
        {"credential": "none"},
        {"source": "discovered"},
        {"profile": "native-2"},
        {"description": "fast"},
        {"open_models": True},
        {"env": {"A": "1"}},
        {"provider": ProviderRef(kind=ProviderKind.ANTHROPIC, base_url="http://127.0.0.1:1")},
    ],
)
def test_any_change_changes_the_digest(catalog: RuntimeCatalog, change: dict[str, Any]) -> None:
    entries = tuple(
        dataclasses.replace(e, **change) if e.name == "anthropic" else e for e in catalog
    )
    assert RuntimeCatalog(entries, default="anthropic").digest != catalog.digest


def test_default_version_and_membership_change_the_digest(catalog: RuntimeCatalog) -> None:
    assert RuntimeCatalog(catalog.entries, default="claude").digest != catalog.digest
    upgraded = tuple(
        dataclasses.replace(e, version="2.1.332") if e.name == "claude" else e for e in catalog
    )
    assert RuntimeCatalog(upgraded, default="anthropic").digest != catalog.digest
    narrower = RuntimeCatalog(tuple(e for e in catalog if e.name != "codex"), "anthropic")
    assert narrower.digest != catalog.digest


def test_digest_and_json_leave_secrets_out() -> None:
    secret_url = "https://user:hunter2@proxy.example:8443/v1?token=abc#frag"
    entry = native(
        provider=ProviderRef(kind=ProviderKind.OPENAI_CHAT, base_url=secret_url),
        env={"TOKEN": "s3cr3t"},
    )
    public = RuntimeCatalog(
        (
            native(
                provider=ProviderRef(
                    kind=ProviderKind.OPENAI_CHAT, base_url="https://proxy.example:8443/v1"
                ),
                env={"TOKEN": "other"},
            ),
        )
    )
    text = json.dumps(RuntimeCatalog((entry,)).to_json())
    assert "hunter2" not in text and "abc" not in text and "s3cr3t" not in text
    assert "https://proxy.example:8443/v1" in text
    assert RuntimeCatalog((entry,)).digest == public.digest
    assert "s3cr3t" not in repr(entry)


# -- immutability ----------------------------------------------------------------------


def test_inputs_are_copied_and_results_are_immutable() -> None:
    models = [ModelOption(id="m1"), ModelOption(id="m2")]
    efforts = ["low", "high"]
    env = {"A": "1"}
    entry = native(
        models=models, default_model="m1", efforts=efforts, default_effort="low", env=env
    )
    entries = [entry]
    catalog = RuntimeCatalog(entries)  # type: ignore[arg-type]
    before = catalog.digest
    models.append(ModelOption(id="m3"))
    efforts.append("max")
    env["B"] = "2"
    entries.append(claude())
    assert [m.id for m in entry.models] == ["m1", "m2"]
    assert entry.efforts == ("low", "high") and dict(entry.env) == {"A": "1"}
    assert catalog.names == ("anthropic",) and catalog.digest == before
    with pytest.raises(dataclasses.FrozenInstanceError):
        entry.default_model = "m2"  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        catalog.default = "anthropic"  # type: ignore[misc]
    with pytest.raises(TypeError):
        entry.env["C"] = "3"  # type: ignore[index]
    assert isinstance(catalog.entries, tuple)


# -- identity and scope ----------------------------------------------------------------


def test_identity_round_trips_through_json(catalog: RuntimeCatalog) -> None:
    for runtime in ("anthropic", "claude", "codex"):
        identity = catalog.resolve(runtime).identity()
        restored = RuntimeIdentity.from_json(json.loads(json.dumps(identity.to_json())))
        assert restored == identity
        assert restored.catalog_digest == catalog.digest
        effort = restored.effort if restored.effort_explicit else None
        again = catalog.resolve(restored.runtime, restored.model, effort).identity()
        assert again == identity


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"runtime": None}, "runtime"),
        ({"harness": "gemini"}, "harness"),
        ({"source": "web"}, "source"),
        ({"selection": 3}, "selection"),
        ({"model": 1}, "model"),
        ({"catalog_digest": None}, "catalog_digest"),
    ],
)
def test_malformed_identity_is_rejected(
    catalog: RuntimeCatalog, change: dict[str, Any], field: str
) -> None:
    data = {**catalog.resolve().identity().to_json(), **change}
    with pytest.raises(InvalidCatalog) as caught:
        RuntimeIdentity.from_json(data)
    assert caught.value.field == field


def test_an_entry_change_is_named_by_its_fields(catalog: RuntimeCatalog) -> None:
    stored = catalog.resolve("claude").identity().to_json()
    assert stored["entry_digest"].startswith("sha256:")
    assert entry_changes(stored, catalog.resolve("claude").identity().to_json()) == ()
    # another entry changing changes the catalog's digest, not this entry's
    wider = RuntimeCatalog((*catalog.entries, native("other")), catalog.default)
    assert wider.digest != catalog.digest
    assert entry_changes(stored, wider.resolve("claude").identity().to_json()) == ()
    changed = RuntimeCatalog(
        tuple(
            claude(models=(ModelOption(id="opus"),), default_model="opus", args=("--x",))
            if e.name == "claude"
            else e
            for e in catalog.entries
        ),
        catalog.default,
    )
    now = changed.resolve("claude").identity().to_json()
    assert entry_changes(stored, now) == ("args", "default_model", "models")
    legacy = {k: v for k, v in stored.items() if k != "entry_fields"}
    assert entry_changes(legacy, now) == ("entry",)
    assert entry_changes({**stored, "entry_digest": ""}, now) == ()  # nothing to compare
