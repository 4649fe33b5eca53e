"""Config files: locations, layering, parsing, validation errors, env, data dir."""

from __future__ import annotations

from pathlib import Path

import pytest

from loopd.config import (
    AgentConfig,
    ConfigFileError,
    Delegate,
    Done,
    DoneCriterion,
    Harness,
    ProviderKind,
    TrustStore,
    WorkspaceFile,
    data_dir,
    load_config,
    read_env,
    user_config_file,
)
from loopd.protocol.errors import ConfigError

FULL = """
[defaults]
runtime = "groq"
model = "qwen"
effort = "low"
mode = "plan"

[providers.groq]
kind = "openai_chat"
base_url = "https://api.groq.com/openai/v1"
api_key_env = "GROQ_API_KEY"
models = [
  "llama-3.3-70b",
  { id = "qwen-2.5-coder-32b", aliases = ["qwen"], context_window = 32_768 },
]
default_model = "qwen"
open_models = false

[runtimes.claude-work]
harness = "claude"
command = "/opt/claude/bin/claude"
args = ["--bare"]
env = { CLAUDE_CONFIG_DIR = "/tmp/cc" }
efforts = ["low", "high"]
default_effort = "high"

[runtimes.fast]
harness = "native"
provider = "groq"
profile = "native-fast"

[limits]
max_iterations = 10
turn_token_ceiling = 50000
turn_cost_ceiling = 2.5

[approvals]
allow = ["read", "grep"]
deny = ["bash:rm -rf *"]
"""


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    return {
        "XDG_CONFIG_HOME": str(tmp_path / "xdg"),
        "HOME": str(tmp_path / "home"),
        "LOOPD_HOME": str(tmp_path / "data"),
    }


@pytest.fixture
def cwd(tmp_path: Path) -> Path:
    (tmp_path / "ws").mkdir()
    return tmp_path / "ws"


def user_file(env: dict[str, str]) -> Path:
    return Path(env["XDG_CONFIG_HOME"]) / "loopd" / "config.toml"


def test_no_files_gives_the_documented_defaults(env: dict[str, str], cwd: Path) -> None:
    config = load_config(env, cwd)
    assert config.sources == ()
    assert config.providers == {} and config.runtimes == {}
    assert config.defaults.runtime is None
    limits = config.limits
    assert (limits.max_iterations, limits.max_tool_calls, limits.max_parallel) == (25, 100, 8)
    assert (limits.max_identical_calls, limits.turn_token_ceiling) == (3, 0)
    assert config.approvals.allow == ()


def test_parses_every_section(env: dict[str, str], cwd: Path) -> None:
    write(user_file(env), FULL)
    config = load_config(env, cwd)
    assert config.sources == (user_file(env),)
    assert (config.defaults.runtime, config.defaults.model) == ("groq", "qwen")
    assert (config.defaults.effort, config.defaults.mode) == ("low", "plan")
    groq = config.providers["groq"]
    assert groq.kind is ProviderKind.OPENAI_CHAT
    assert groq.api_key_env == "GROQ_API_KEY"
    assert [m.id for m in groq.choices.models or ()] == ["llama-3.3-70b", "qwen-2.5-coder-32b"]
    assert (groq.choices.models or ())[1].aliases == ("qwen",)
    assert [m.context_window for m in groq.choices.models or ()] == [None, 32_768]
    assert groq.choices.open_models is False
    work = config.runtimes["claude-work"]
    assert work.harness is Harness.CLAUDE
    assert (work.command, work.args) == ("/opt/claude/bin/claude", ("--bare",))
    assert dict(work.env) == {"CLAUDE_CONFIG_DIR": "/tmp/cc"}
    assert (work.choices.efforts, work.choices.default_effort) == (("low", "high"), "high")
    assert work.choices.models is None  # not set: the builder's built-in list applies
    assert config.runtimes["fast"].provider == "groq"
    assert config.runtimes["fast"].profile == "native-fast"
    assert (config.limits.max_iterations, config.limits.turn_token_ceiling) == (10, 50000)
    assert config.limits.turn_cost_ceiling == 2.5
    assert config.limits.max_parallel == 8
    assert config.approvals.allow == ("read", "grep")
    assert config.approvals.deny == ("bash:rm -rf *",)


def test_workspace_overrides_user_key_by_key(env: dict[str, str], cwd: Path) -> None:
    write(user_file(env), FULL)
    workspace = write(
        cwd / ".loopd" / "config.toml",
        """
[defaults]
runtime = "claude-work"

[providers.groq]
base_url = "http://127.0.0.1:9000/v1"
models = ["only-this"]

[limits]
max_parallel = 2
""",
    )
    TrustStore(data_dir(env)).trust(WorkspaceFile.read(cwd, workspace) or pytest.fail())
    config = load_config(env, cwd)
    assert config.sources == (user_file(env), workspace)
    assert config.defaults.runtime == "claude-work"
    assert config.defaults.model == "qwen"  # untouched keys survive
    groq = config.providers["groq"]
    assert groq.base_url == "http://127.0.0.1:9000/v1"
    assert groq.kind is ProviderKind.OPENAI_CHAT  # from the user file
    assert [m.id for m in groq.choices.models or ()] == ["only-this"]  # lists are replaced
    assert (config.limits.max_parallel, config.limits.max_iterations) == (2, 10)


def test_user_file_location_follows_xdg_then_home(tmp_path: Path) -> None:
    assert user_config_file({"XDG_CONFIG_HOME": "/x"}) == Path("/x/loopd/config.toml")
    assert user_config_file({"HOME": "/h"}) == Path("/h/.config/loopd/config.toml")
    assert user_config_file({"XDG_CONFIG_HOME": "", "HOME": "/h"}) == Path(
        "/h/.config/loopd/config.toml"
    )


def test_explicit_paths_override_the_locations(env: dict[str, str], tmp_path: Path) -> None:
    chosen = write(tmp_path / "elsewhere.toml", '[defaults]\nruntime = "codex"\n')
    write(user_file(env), '[defaults]\nruntime = "claude"\n')
    config = load_config(env, tmp_path, user_file=chosen)
    assert config.defaults.runtime == "codex"


@pytest.mark.parametrize(
    ("text", "key", "problem"),
    [
        ("[nope]\n", "nope", "unknown key"),
        ("[defaults]\nrutime = 'x'\n", "defaults.rutime", "unknown key"),
        ("[providers.p]\nkind = 'gemini'\n", "providers.p.kind", "unknown value 'gemini'"),
        ("[providers.p]\nbase_url = 'http://x'\n", "providers.p.kind", "is required"),
        (
            "[providers.p]\nkind = 'openai_chat'\nbase_url = 'ftp://x'\n",
            "providers.p.base_url",
            "http",
        ),
        (
            "[providers.p]\nkind = 'openai_chat'\nanthropic_version = '1'\n",
            "providers.p.anthropic_version",
            "only applies",
        ),
        (
            "[providers.p]\nkind = 'anthropic'\napi_key_env = 'not a var'\n",
            "providers.p.api_key_env",
            "environment variable",
        ),
        ("[providers.p]\nkind = 'anthropic'\nmodels = [1]\n", "providers.p.models[0]", "model id"),
        (
            "[providers.p]\nkind = 'anthropic'\nmodels = [{ alias = 'x' }]\n",
            "providers.p.models[0].alias",
            "unknown key",
        ),
        (
            "[providers.p]\nkind = 'anthropic'\nopen_models = 'yes'\n",
            "providers.p.open_models",
            "true or false",
        ),
        ("[providers.'bad name']\nkind = 'anthropic'\n", "providers.bad name", "must be a name"),
        (
            "[runtimes.r]\nharness = 'gemini'\ncommand = 'g'\n",
            "runtimes.r.harness",
            "unknown value",
        ),
        ("[runtimes.r]\nharness = 'native'\n", "runtimes.r.provider", "is required"),
        (
            "[runtimes.r]\nharness = 'native'\nprovider = 'p'\ncommand = 'x'\n",
            "runtimes.r.command",
            "in-process",
        ),
        (
            "[runtimes.r]\nharness = 'claude'\nprovider = 'p'\n",
            "runtimes.r.provider",
            "only applies",
        ),
        ("[runtimes.r]\nharness = 'acp'\n", "runtimes.r.command", "is required"),
        ("[runtimes.r]\nharness = 'codex'\nargs = 'x'\n", "runtimes.r.args", "list"),
        ("[runtimes.r]\nharness = 'codex'\nenv = { A = 1 }\n", "runtimes.r.env.A", "NAME"),
        ("[limits]\nmax_parallel = -1\n", "limits.max_parallel", "zero or more"),
        ("[limits]\nmax_parallel = true\n", "limits.max_parallel", "whole number"),
        ("[limits]\nturn_cost_ceiling = -0.5\n", "limits.turn_cost_ceiling", "zero or more"),
        ('[limits]\nturn_cost_ceiling = "1"\n', "limits.turn_cost_ceiling", "a number"),
        ("[approvals]\nallow = 'read'\n", "approvals.allow", "list"),
        ("[agents.explore]\nrunning = ['x']\n", "agents.explore.running", "unknown key"),
        ("[agents.explore]\nruntimes = 'x'\n", "agents.explore.runtimes", "list"),
        ("[agents.explore]\nruntimes = []\n", "agents.explore.runtimes", "is empty"),
        ("[agents.explore]\nruntimes = ['a', 'a']\n", "agents.explore.runtimes", "twice"),
        ("[agents.explore]\nruntimes = ['a b']\n", "agents.explore.runtimes", "runtime name"),
        (
            "[agents.explore]\nruntimes = ['a']\ndefault = 'b'\n",
            "agents.explore.default",
            "'b' is not one of runtimes",
        ),
        ("[agents.explore]\ndefault = 'a b'\n", "agents.explore.default", "must be a name"),
        ("[agents.explore]\nmodel = 1\n", "agents.explore.model", "non-empty string"),
        ("[agents.'no good']\nmodel = 'm'\n", "agents.no good", "must be a name"),
        ("agents = 3\n", "agents", "table"),
        ("providers = 3\n", "providers", "table"),
        ("[done]\ntimeout_seconds = 0\n", "done.timeout_seconds", "positive"),
        ("[done]\nenabled = 'yes'\n", "done.enabled", "true or false"),
        ("[[done.criteria]]\nname = 't'\n", "done.criteria[0].command", "is required"),
        (
            "[[done.criteria]]\nname='t'\ncommand='x'\nexit_code=300\n",
            "done.criteria[0].exit_code",
            "0 to 255",
        ),
        (
            "[done]\ncriteria = [{name='t', command='x'}, {name='t', command='y'}]\n",
            "done.criteria[1].name",
            "another criterion",
        ),
    ],
)
def test_invalid_values_name_file_key_and_problem(
    env: dict[str, str], cwd: Path, text: str, key: str, problem: str
) -> None:
    path = write(user_file(env), text)
    with pytest.raises(ConfigFileError) as caught:
        load_config(env, cwd)
    assert (caught.value.path, caught.value.key) == (path, key)
    assert problem in caught.value.problem
    assert str(path) in str(caught.value) and key in str(caught.value)
    assert isinstance(caught.value, ConfigError)


def test_error_names_the_file_that_set_the_bad_value(env: dict[str, str], cwd: Path) -> None:
    write(user_file(env), "[providers.p]\nkind = 'anthropic'\n")
    workspace = write(cwd / ".loopd" / "config.toml", "[providers.p]\nkind = 'bogus'\n")
    TrustStore(data_dir(env)).trust(WorkspaceFile.read(cwd, workspace) or pytest.fail())
    with pytest.raises(ConfigFileError) as caught:
        load_config(env, cwd)
    assert caught.value.path == workspace

    write(user_file(env), "[providers.p]\nkind = 'bogus'\n")
    write(workspace, "[providers.p]\nbase_url = 'http://x'\n")
    with pytest.raises(ConfigFileError) as caught:
        load_config(env, cwd)
    assert caught.value.path == user_file(env)


def test_invalid_toml_names_the_file(env: dict[str, str], cwd: Path) -> None:
    path = write(user_file(env), "[defaults\n")  # an untrusted workspace file: ignored
    with pytest.raises(ConfigFileError, match="not valid TOML") as caught:
        load_config(env, cwd)
    assert caught.value.path == path


def test_a_file_nested_too_deep_is_invalid_toml_not_a_crash(env: dict[str, str], cwd: Path) -> None:
    """Not named in the issue: TOML is another parser loopd runs on a repository's
    bytes; tomllib recursed once per `[` and raised RecursionError."""
    path = write(user_file(env), "a = " + "[" * 50_000 + "]" * 50_000 + "\n")
    with pytest.raises(ConfigFileError, match="not valid TOML: nested too deep") as caught:
        load_config(env, cwd)
    assert caught.value.path == path


def test_read_env_treats_empty_as_unset_and_hides_keys() -> None:
    settings = read_env(
        {"ANTHROPIC_API_KEY": "sk-secret", "OPENAI_API_KEY": "", "OLLAMA_HOST": "box:1"}
    )
    assert settings.anthropic_api_key == "sk-secret"
    assert settings.openai_api_key is None
    assert settings.ollama_host == "box:1"
    assert "sk-secret" not in repr(settings)


def test_data_dir_prefers_loopd_home(tmp_path: Path) -> None:
    assert data_dir({"LOOPD_HOME": str(tmp_path)}) == tmp_path
    fallback = data_dir({})
    assert fallback.is_absolute() and "loopd" in fallback.parts[-1]


def test_the_approval_timeout_is_configurable_and_must_be_positive(tmp_path: Path) -> None:
    from loopd.protocol.errors import ConfigError

    user = tmp_path / "user.toml"
    user.write_text("[approvals]\ntimeout_seconds = 30\n")
    config = load_config({}, tmp_path, user_file=user, workspace_file=tmp_path / "none.toml")
    assert config.approvals.timeout_seconds == 30
    user.write_text("[approvals]\ntimeout_seconds = 0\n")
    with pytest.raises(ConfigError, match="timeout_seconds"):
        load_config({}, tmp_path, user_file=user, workspace_file=tmp_path / "none.toml")


def test_the_sandbox_table_lists_sockets_and_home_entries(tmp_path: Path) -> None:
    from loopd.protocol.errors import ConfigError

    user = tmp_path / "user.toml"
    none = tmp_path / "none.toml"
    user.write_text(
        '[sandbox]\nallow_unix_sockets = ["/run/pg.sock"]\nhome_readable = ["~/.m2", ".ivy2"]\n'
    )
    config = load_config({}, tmp_path, user_file=user, workspace_file=none)
    assert config.sandbox.allow_unix_sockets == ("/run/pg.sock",)
    assert config.sandbox.home_readable == ("~/.m2", ".ivy2")
    assert (
        load_config({}, tmp_path, user_file=none, workspace_file=none).sandbox.home_readable == ()
    )
    bad_values = (
        'allow_unix_sockets = ["pg.sock"]',
        'home_readable = ["/etc"]',
        'home_readable = ["~/"]',
        'home_readable = ["./."]',
        'home_readable = ["../other"]',
        "other = 1",
    )
    for bad in bad_values:
        user.write_text(f"[sandbox]\n{bad}\n")
        with pytest.raises(ConfigError, match="sandbox"):
            load_config({}, tmp_path, user_file=user, workspace_file=none)


def test_the_done_table_reads_criteria_and_defaults(env: dict[str, str], cwd: Path) -> None:
    assert load_config(env, cwd).done == Done()
    write(
        cwd / ".loopd" / "config.toml",
        """
[done]
enabled = true
protected = ["tests/**"]
timeout_seconds = 60
max_stall_cycles = 3

[[done.criteria]]
name = "tests"
command = "pytest -q"

[[done.criteria]]
name = "lint"
command = "ruff check"
exit_code = 1
""",
    )
    assert load_config(env, cwd).done == Done()  # inert until the folder is trusted
    workspace = cwd / ".loopd" / "config.toml"
    TrustStore(data_dir(env)).trust(WorkspaceFile.read(cwd, workspace) or pytest.fail())
    done = load_config(env, cwd).done
    assert done == Done(
        enabled=True,
        protected=("tests/**",),
        timeout_seconds=60,
        max_stall_cycles=3,
        criteria=(
            DoneCriterion(name="tests", command="pytest -q"),
            DoneCriterion(name="lint", command="ruff check", exit_code=1),
        ),
    )


def test_agents_tables_name_each_role_its_runtimes_and_defaults(
    env: dict[str, str], cwd: Path
) -> None:
    assert load_config(env, cwd).agents == {}
    write(
        user_file(env),
        "[agents.explore]\nruntimes = ['cheap', 'main']\ndefault = 'main'\nmodel = 'kid'\n"
        "effort = 'low'\n[agents.reviewer]\nruntimes = ['claude']\n",
    )
    agents = load_config(env, cwd).agents
    assert agents["explore"] == AgentConfig(
        name="explore", runtimes=("cheap", "main"), default="main", model="kid", effort="low"
    )
    assert agents["reviewer"] == AgentConfig(name="reviewer", runtimes=("claude",))


def test_the_delegate_table_names_a_runtime_and_model(env: dict[str, str], cwd: Path) -> None:
    assert load_config(env, cwd).delegate == Delegate()
    write(user_file(env), "[delegate]\nruntime = 'cheap'\nmodel = 'small'\n")
    assert load_config(env, cwd).delegate == Delegate(runtime="cheap", model="small")
    write(user_file(env), "[delegate]\nruntime = 'not a name!'\n")
    with pytest.raises(ConfigFileError, match=r"delegate\.runtime"):
        load_config(env, cwd)
