"""The catalog fields of seed 001 beyond names and models: a small model, per-effort
targets, per-model source and credential, the explicit-effort flag, and the closed
set of error kinds; each from the config file through to `loopd catalog --json`."""

from __future__ import annotations

import json
from typing import Any, get_args

import pytest
from test_build import build

from loopd.catalog import (
    CatalogError,
    InvalidCatalog,
    RuntimeEntry,
    RuntimeIdentity,
    UnknownAgent,
    UnknownHarness,
    UnknownModel,
    UnknownRuntime,
    UnsupportedEffort,
    catalog_to_json,
    catalog_to_text,
)
from loopd.catalog.entry import CredentialMode
from loopd.catalog.errors import ErrorKind
from loopd.config import Harness
from loopd.config.jsonschema import config_json_schema
from loopd.config.schema import CREDENTIALS
from loopd.protocol.errors import ConfigError

PROVIDER = """
[providers.anthropic]
kind = "anthropic"
api_key_env = "ANTHROPIC_API_KEY"
efforts = ["low", "high"]
small_model = "haiku"
models = [
  { id = "claude-sonnet-4-5", aliases = ["sonnet"], targets = { high = "claude-sonnet-4-5-hi" } },
  { id = "claude-haiku-4-5", aliases = ["haiku"], credential = "none" },
]
"""


def entry_json(text: str, name: str = "anthropic") -> dict[str, Any]:
    data = catalog_to_json(build(text).catalog)
    assert json.loads(json.dumps(data)) == data
    return next(e for e in data["entries"] if e["name"] == name)


def test_a_small_model_is_resolved_to_its_id_and_listed() -> None:
    catalog = build(PROVIDER).catalog
    assert catalog.get("anthropic").small_model == "claude-haiku-4-5"  # type: ignore[union-attr]
    assert catalog.resolve("anthropic").small_model == "claude-haiku-4-5"
    assert entry_json(PROVIDER)["small_model"] == "claude-haiku-4-5"
    assert "claude-haiku-4-5 (small)" in catalog_to_text(catalog)
    with pytest.raises(InvalidCatalog, match="small_model: 'opus' is not one of its models"):
        build(PROVIDER.replace('small_model = "haiku"', 'small_model = "opus"'))


def test_a_harness_managed_runtime_takes_no_small_model() -> None:
    with pytest.raises(InvalidCatalog, match="offers no models"):
        RuntimeEntry(
            name="codex",
            harness=Harness.CODEX,
            selection="harness_managed",
            command="/usr/bin/codex",
            small_model="mini",
        )


def test_an_effort_selects_the_target_the_provider_receives() -> None:
    catalog = build(PROVIDER).catalog
    high = catalog.resolve("anthropic", "sonnet", "high")
    assert (high.model, high.target) == ("claude-sonnet-4-5", "claude-sonnet-4-5-hi")
    low = catalog.resolve("anthropic", "sonnet", "low")
    assert low.target == "claude-sonnet-4-5"  # no target for low: the id itself
    assert catalog.resolve("anthropic", "haiku", "high").target == "claude-haiku-4-5"
    assert high.identity().target == "claude-sonnet-4-5-hi"
    assert entry_json(PROVIDER)["models"][0]["targets"] == {"high": "claude-sonnet-4-5-hi"}


def test_a_target_for_an_effort_the_runtime_lacks_is_refused() -> None:
    with pytest.raises(InvalidCatalog, match="'max' is not one of efforts"):
        build(PROVIDER.replace("high = ", "max = "))
    with pytest.raises(ConfigError, match='must be EFFORT = "model id"'):
        build(PROVIDER.replace('"claude-sonnet-4-5-hi"', "3"))


def test_a_model_may_have_its_own_credential() -> None:
    catalog = build(PROVIDER).catalog
    assert catalog.resolve("anthropic", "sonnet").credential == "api_key"  # the entry's
    haiku = catalog.resolve("anthropic", "haiku")
    assert haiku.credential == "none" and haiku.identity().credential == "none"
    assert [m["credential"] for m in entry_json(PROVIDER)["models"]] == [None, "none"]
    with pytest.raises(ConfigError, match="unknown value 'token'"):
        build(PROVIDER.replace('credential = "none"', 'credential = "token"'))


def test_built_in_models_say_so_next_to_a_configured_entry() -> None:
    text = '[providers.anthropic]\nkind = "anthropic"\napi_key_env = "ANTHROPIC_API_KEY"\n'
    catalog = build(text).catalog
    resolved = catalog.resolve("anthropic")
    assert catalog.get("anthropic").source == "config"  # type: ignore[union-attr]
    assert resolved.source == "builtin" and resolved.identity().source == "builtin"
    assert {m["source"] for m in entry_json(text)["models"]} == {"builtin"}
    assert {m["source"] for m in entry_json(PROVIDER)["models"]} == {None}  # listed: config
    assert build(PROVIDER).catalog.resolve("anthropic").source == "config"


def test_the_identity_records_whether_the_effort_was_chosen() -> None:
    catalog = build(
        PROVIDER.replace(
            'efforts = ["low", "high"]', 'efforts = ["low", "high"]\ndefault_effort = "low"'
        )
    ).catalog
    chosen, defaulted = catalog.resolve(effort="low"), catalog.resolve()
    assert chosen.effort == defaulted.effort == "low"
    assert (chosen.effort_explicit, defaulted.effort_explicit) == (True, False)
    stored = RuntimeIdentity.from_json(json.loads(json.dumps(defaulted.identity().to_json())))
    assert stored.effort_explicit is False and stored == defaulted.identity()
    legacy = {k: v for k, v in chosen.identity().to_json().items() if k != "effort_explicit"}
    assert RuntimeIdentity.from_json(legacy).effort_explicit is False  # older records


def test_error_kinds_are_a_closed_set_one_per_class() -> None:
    classes = (
        InvalidCatalog,
        UnknownAgent,
        UnknownRuntime,
        UnknownHarness,
        UnknownModel,
        UnsupportedEffort,
    )
    assert sorted(c.kind for c in classes) == sorted(get_args(ErrorKind))
    assert {c for c in CatalogError.__subclasses__()} == set(classes)
    catalog = build(PROVIDER).catalog
    for call, kind in (
        (lambda: catalog.resolve(agent="reviewer"), "unknown_agent"),
        (lambda: catalog.resolve("nope"), "unknown_runtime"),
        (lambda: catalog.resolve("codex"), "unknown_harness"),
        (lambda: catalog.resolve("anthropic", "gpt-9"), "unknown_model"),
        (lambda: catalog.resolve("anthropic", effort="max"), "unsupported_effort"),
    ):
        with pytest.raises(CatalogError) as caught:
            call()
        assert caught.value.kind == kind


def test_the_config_schema_describes_the_new_keys() -> None:
    schema = config_json_schema()
    provider = schema["properties"]["providers"]["additionalProperties"]["properties"]
    assert provider["small_model"]["type"] == "string"
    spec = provider["models"]["items"]["anyOf"][1]["properties"]
    assert spec["credential"]["enum"] == list(CREDENTIALS) == list(get_args(CredentialMode))
    assert spec["targets"] == {
        "type": "object",
        "additionalProperties": {"type": "string", "minLength": 1},
        "description": spec["targets"]["description"],
    }
