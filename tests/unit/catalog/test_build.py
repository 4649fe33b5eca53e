"""build_catalog against a fake machine, and discovery against a real executable."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest

from loopd.catalog import (
    CatalogBuild,
    Skipped,
    UnknownModel,
    UnsupportedEffort,
    build_catalog,
    cli_version,
    discover_catalog,
    ollama_url,
    parse_version,
    probed_version,
)
from loopd.config import Config, Harness, ProviderKind, load_config, merge_layers, parse_config


class FakeMachine:
    """Installed binaries by path; `which` and `version_of` answer from it and record
    what they were asked."""

    def __init__(self, binaries: dict[str, str | None], path_dir: str = "/usr/bin") -> None:
        self.binaries = binaries
        self.path_dir = path_dir
        self.asked: list[str] = []

    def which(self, command: str) -> str | None:
        self.asked.append(command)
        path = command if "/" in command else f"{self.path_dir}/{command}"
        return path if path in self.binaries else None

    def version_of(self, path: str) -> str | None:
        return self.binaries[path]


def config_from(text: str = "") -> Config:
    import tomllib

    return parse_config(merge_layers([(None, tomllib.loads(text))]))


def build(
    text: str = "", env: dict[str, str] | None = None, **binaries: str | None
) -> CatalogBuild:
    machine = FakeMachine({f"/usr/bin/{name}": v for name, v in binaries.items()})
    return build_catalog(
        config_from(text), env or {}, which=machine.which, version_of=machine.version_of
    )


def test_nothing_configured_or_installed_gives_an_empty_catalog() -> None:
    built = build()
    assert built.catalog.names == () and built.catalog.default is None
    assert built.skipped == (
        Skipped("claude", "command 'claude' not found"),
        Skipped("codex", "command 'codex' not found"),
    )


def test_anthropic_key_adds_a_native_entry_that_names_the_variable() -> None:
    built = build(env={"ANTHROPIC_API_KEY": "sk-ant-secret"})
    entry = built.catalog.select("anthropic")
    assert entry.harness is Harness.NATIVE and entry.source == "discovered"
    assert entry.credential == "api_key"
    assert entry.provider is not None
    assert entry.provider.kind is ProviderKind.ANTHROPIC
    assert entry.provider.base_url == "https://api.anthropic.com"
    assert entry.provider.api_key_env == "ANTHROPIC_API_KEY"
    assert entry.open_models and entry.default_model == "claude-sonnet-4-5"
    assert built.catalog.resolve(model="opus").model == "claude-opus-4-1"
    assert "sk-ant-secret" not in repr(built)
    assert built.catalog.default == "anthropic"


def test_base_url_alone_adds_an_entry_without_credential() -> None:
    built = build(env={"ANTHROPIC_BASE_URL": "http://127.0.0.1:8080"})
    entry = built.catalog.select("anthropic")
    assert entry.credential == "none"
    assert entry.provider is not None and entry.provider.base_url == "http://127.0.0.1:8080"


@pytest.mark.parametrize(
    ("env", "kind", "base_url"),
    [
        ({"OPENAI_API_KEY": "k"}, ProviderKind.OPENAI_RESPONSES, "https://api.openai.com/v1"),
        (
            {"OPENAI_API_KEY": "k", "OPENAI_BASE_URL": "https://api.openai.com/v1"},
            ProviderKind.OPENAI_RESPONSES,
            "https://api.openai.com/v1",
        ),
        (
            {"OPENAI_BASE_URL": "http://127.0.0.1:8000/v1"},
            ProviderKind.OPENAI_CHAT,
            "http://127.0.0.1:8000/v1",
        ),
    ],
)
def test_openai_kind_follows_the_endpoint(
    env: dict[str, str], kind: ProviderKind, base_url: str
) -> None:
    entry = build(env=env).catalog.select("openai")
    assert entry.provider is not None
    assert (entry.provider.kind, entry.provider.base_url) == (kind, base_url)


@pytest.mark.parametrize(
    ("host", "url"),
    [
        ("127.0.0.1", "http://127.0.0.1:11434/v1"),
        ("box:1234", "http://box:1234/v1"),
        ("https://ollama.example", "https://ollama.example:11434/v1"),
        ("http://box:1/prefix/", "http://box:1/prefix/v1"),
        ("[::1]:9", "http://[::1]:9/v1"),
    ],
)
def test_ollama_host_becomes_an_openai_chat_url(host: str, url: str) -> None:
    assert ollama_url(host) == url


def test_ollama_entry_is_open_with_no_default_model() -> None:
    catalog = build(env={"OLLAMA_HOST": "127.0.0.1"}).catalog
    entry = catalog.select("ollama")
    assert entry.provider is not None
    assert entry.provider.kind is ProviderKind.OPENAI_CHAT
    assert (entry.models, entry.default_model, entry.open_models) == ((), None, True)
    assert catalog.resolve("ollama", "qwen2.5-coder:7b").model == "qwen2.5-coder:7b"


def test_claude_and_codex_found_on_path_with_versions() -> None:
    built = build(claude="2.1.197", codex="0.171.0")
    claude, codex = built.catalog.select("claude"), built.catalog.select("codex")
    assert (claude.command, claude.version, claude.source) == (
        "/usr/bin/claude",
        "2.1.197",
        "discovered",
    )
    assert claude.selection == "explicit" and claude.default_model == "sonnet"
    assert claude.credential == "cli_login"
    assert (codex.selection, codex.models, codex.version) == ("harness_managed", (), "0.171.0")
    assert built.catalog.resolve("codex").model is None
    assert built.skipped == ()
    assert built.catalog.default == "claude"


def test_cli_credential_is_api_key_when_the_key_is_in_the_environment() -> None:
    built = build(env={"ANTHROPIC_API_KEY": "k"}, claude="1.0.0")
    assert built.catalog.select("claude").credential == "api_key"


def test_a_binary_without_a_version_still_gets_an_entry() -> None:
    assert build(codex=None).catalog.select("codex").version is None


def test_configured_runtime_uses_its_command_path_and_choices() -> None:
    machine = FakeMachine({"/opt/cc/claude": "2.1.332", "/usr/bin/claude": "2.1.197"})
    text = """
[runtimes.claude]
harness = "claude"
command = "/opt/cc/claude"
args = ["--bare"]
models = [{ id = "claude-opus-4-8", aliases = ["opus"] }]
efforts = ["low", "high"]
default_effort = "high"
"""
    built = build_catalog(config_from(text), {}, which=machine.which, version_of=machine.version_of)
    entry = built.catalog.select("claude")
    assert (entry.source, entry.command, entry.version) == ("config", "/opt/cc/claude", "2.1.332")
    assert entry.args == ("--bare",)
    assert built.catalog.resolve("claude", "opus").model == "claude-opus-4-8"
    assert built.catalog.resolve("claude").effort == "high"
    assert "/usr/bin/claude" not in machine.asked and "claude" not in machine.asked


def test_configured_runtime_whose_command_is_missing_is_skipped() -> None:
    built = build('[runtimes.zed-agent]\nharness = "acp"\ncommand = "my-agent"\n')
    assert "zed-agent" not in built.catalog
    assert Skipped("zed-agent", "command 'my-agent' not found") in built.skipped


def test_configured_acp_runtime_is_harness_managed() -> None:
    built = build(
        '[runtimes.gemini]\nharness = "acp"\ncommand = "gemini"\nargs = ["--acp"]\n', gemini="0.9.0"
    )
    entry = built.catalog.select("gemini")
    assert (entry.selection, entry.args, entry.profile) == ("harness_managed", ("--acp",), "acp")


def test_configured_provider_and_a_native_runtime_over_it() -> None:
    text = """
[providers.groq]
kind = "openai_chat"
base_url = "https://api.groq.com/openai/v1"
api_key_env = "GROQ_API_KEY"
models = ["llama-3.3-70b", "qwen-coder"]

[runtimes.fast]
harness = "native"
provider = "groq"
default_model = "qwen-coder"
profile = "native-fast"
"""
    catalog = build(text).catalog
    groq, fast = catalog.select("groq"), catalog.select("fast")
    assert (groq.source, groq.credential, groq.open_models) == ("config", "api_key", False)
    assert groq.default_model == "llama-3.3-70b"
    assert (fast.default_model, fast.profile, fast.provider) == (
        "qwen-coder",
        "native-fast",
        groq.provider,
    )
    with pytest.raises(UnknownModel):
        catalog.resolve("groq", "gpt-5")


def test_native_runtime_may_use_a_discovered_provider() -> None:
    text = '[runtimes.cheap]\nharness = "native"\nprovider = "anthropic"\ndefault_model = "haiku"\n'
    catalog = build(text, env={"ANTHROPIC_API_KEY": "k"}).catalog
    assert catalog.resolve("cheap").model == "claude-haiku-4-5"


def test_native_runtime_over_an_unknown_provider_is_skipped() -> None:
    built = build('[runtimes.cheap]\nharness = "native"\nprovider = "anthropic"\n')
    assert "cheap" not in built.catalog
    assert built.skipped[0].name == "cheap" and "anthropic" in built.skipped[0].reason


def test_configured_provider_replaces_the_discovered_one_of_the_same_name() -> None:
    text = '[providers.anthropic]\nkind = "anthropic"\nbase_url = "http://127.0.0.1:1"\n'
    entry = build(text, env={"ANTHROPIC_API_KEY": "k"}).catalog.select("anthropic")
    assert entry.source == "config" and entry.credential == "none"
    assert entry.provider is not None and entry.provider.base_url == "http://127.0.0.1:1"


def test_default_prefers_native_then_claude_then_codex() -> None:
    env = {"OLLAMA_HOST": "h", "ANTHROPIC_API_KEY": "k"}
    assert build(env=env, claude="1", codex="1").catalog.default == "anthropic"
    assert build(codex="1", claude="1").catalog.default == "claude"
    assert build(codex="1").catalog.default == "codex"
    configured = '[providers.zz]\nkind = "openai_chat"\nbase_url = "http://x"\n'
    assert build(configured, env=env).catalog.default == "zz"


def test_configured_default_by_name_or_harness() -> None:
    env = {"ANTHROPIC_API_KEY": "k"}
    assert build('[defaults]\nruntime = "codex"\n', env, codex="1").catalog.default == "codex"
    assert build('[defaults]\nruntime = "claude"\n', env, claude="1").catalog.default == "claude"


def test_unavailable_default_is_reported_not_replaced() -> None:
    built = build('[defaults]\nruntime = "codex"\n', {"ANTHROPIC_API_KEY": "k"})
    assert built.catalog.default is None
    reason = (
        "defaults.runtime: no runtime with harness 'codex' is available (runtimes: anthropic): "
        "install the Codex CLI (npm install -g @openai/codex) and put `codex` on PATH"
    )
    assert Skipped("codex", reason) in built.skipped


def test_default_model_and_effort_are_pinned_on_the_default_entry() -> None:
    text = '[defaults]\nruntime = "anthropic"\nmodel = "haiku"\neffort = "high"\n'
    catalog = build(text, {"ANTHROPIC_API_KEY": "k"}).catalog
    resolved = catalog.resolve()
    assert (resolved.model, resolved.effort) == ("claude-haiku-4-5", "high")


def test_default_model_joins_an_open_entry_list() -> None:
    text = '[defaults]\nruntime = "ollama"\nmodel = "qwen2.5-coder:7b"\n'
    catalog = build(text, {"OLLAMA_HOST": "h"}).catalog
    assert catalog.resolve().model == "qwen2.5-coder:7b"
    assert [m.id for m in catalog.select("ollama").models] == ["qwen2.5-coder:7b"]


def test_invalid_default_model_or_effort_raises() -> None:
    env = {"ANTHROPIC_API_KEY": "k"}
    with pytest.raises(UnknownModel):
        build('[defaults]\nruntime = "claude"\nmodel = "gpt-5"\n', env, claude="1")
    with pytest.raises(UnsupportedEffort):
        build('[defaults]\neffort = "max"\n', env)


def test_same_config_in_another_order_gives_the_same_digest() -> None:
    first = """
[providers.b]
kind = "openai_chat"
base_url = "http://b"
[providers.a]
kind = "anthropic"
[runtimes.x]
harness = "codex"
"""
    second = """
[runtimes.x]
harness = "codex"
[providers.a]
kind = "anthropic"
[providers.b]
base_url = "http://b"
kind = "openai_chat"
"""
    env = {"OLLAMA_HOST": "h", "ANTHROPIC_API_KEY": "k"}
    one, two = build(first, env, codex="1"), build(second, env, codex="1")
    assert one.catalog.digest == two.catalog.digest
    assert build(first, env, codex="2").catalog.digest != one.catalog.digest


# -- real discovery --------------------------------------------------------------------


def executable(path: Path, script: str) -> Path:
    path.write_text(f"#!/bin/sh\n{script}\n")
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return path


def test_real_discovery_finds_and_asks_a_claude_on_path(tmp_path: Path) -> None:
    claude = executable(tmp_path / "claude", 'echo "2.1.197 (Claude Code)"')
    env = {"PATH": str(tmp_path), "HOME": str(tmp_path)}
    built = discover_catalog(load_config(env, tmp_path), env)
    entry = built.catalog.select("claude")
    assert (entry.command, entry.version) == (str(claude), "2.1.197")
    assert built.catalog.default == "claude"
    assert Skipped("codex", "command 'codex' not found") in built.skipped


def test_a_binary_is_asked_its_version_once_until_it_changes(tmp_path: Path) -> None:
    """The daemon builds a catalog per editor connection: each CLI's `--version`
    runs once, and again only when another binary is at the path (an upgrade)."""
    asked = tmp_path / "asked"
    claude = executable(tmp_path / "claude", f'echo x >> {asked}; echo "2.1.197 (Claude Code)"')
    assert [probed_version(str(claude)) for _ in range(3)] == ["2.1.197"] * 3
    assert asked.read_text().count("x") == 1
    executable(claude, f'echo x >> {asked}; echo "2.2.0 (Claude Code)"')  # upgraded
    assert probed_version(str(claude)) == "2.2.0"
    assert asked.read_text().count("x") == 2


def test_cli_version_is_none_when_the_probe_fails(tmp_path: Path) -> None:
    broken = executable(tmp_path / "broken", "echo oops >&2; exit 3")
    silent = executable(tmp_path / "silent", "echo no numbers here")
    assert cli_version(str(broken)) is None
    assert cli_version(str(silent)) is None
    assert cli_version(str(tmp_path / "missing")) is None
    hung = executable(tmp_path / "hung", "exec sleep 5")
    assert cli_version(str(hung), timeout=0.05) is None


@pytest.mark.parametrize(
    ("output", "version"),
    [
        ("2.1.197 (Claude Code)\n", "2.1.197"),
        ("codex-cli 0.171.0\n", "0.171.0"),
        ("tool v1.2.3-beta.1", "1.2.3-beta.1"),
        ("agent 0.9", "0.9"),
        ("no version", None),
    ],
)
def test_parse_version(output: str, version: str | None) -> None:
    assert parse_version(output) == version


def test_discovery_never_finds_a_program_through_a_relative_path_entry(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A stray `:` in PATH means "here": a repository's own `claude` must not be
    what discovery runs `--version` on."""
    from loopd.catalog import path_which

    planted = tmp_path / "claude"
    planted.write_text("#!/bin/sh\necho 9.9.9\n")
    planted.chmod(0o755)
    monkeypatch.chdir(tmp_path)
    for search in ("/nonexistent-bin:", ":/nonexistent-bin", ".", "./"):
        assert path_which(search)("claude") is None, search
    assert path_which(str(tmp_path))("claude") == str(planted)


def test_cli_version_asks_each_binary_once_until_it_changes(tmp_path: Path) -> None:
    """The daemon builds a catalog for every editor connection: a CLI's `--version`
    (2 s for Claude Code) runs once per binary, and again after an upgrade."""
    runs = tmp_path / "runs"
    cli = executable(tmp_path / "cli", f'echo run >> "{runs}"; echo "tool 1.0.0"')
    assert cli_version(str(cli)) == "1.0.0"
    assert cli_version(str(cli)) == "1.0.0"
    assert runs.read_text().count("run") == 1
    upgraded = executable(tmp_path / "upgraded", f'echo run >> "{runs}"; echo "tool 1.2.0"')
    upgraded.replace(cli)  # as an installer does: a new file at the same path
    assert cli_version(str(cli)) == "1.2.0"
    assert runs.read_text().count("run") == 2
