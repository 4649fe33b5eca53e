"""loopd's configuration: two TOML files plus a few environment variables.

Files, lowest precedence first (tables merge key by key, other values are replaced):

    $XDG_CONFIG_HOME/loopd/config.toml   user file (XDG_CONFIG_HOME defaults to ~/.config)
    <cwd>/.loopd/config.toml             workspace file

The workspace file is inert until its folder is trusted (`loopd trust DIR`, or the
editor's question; see `loopd.config.trust`). Trust is recorded with the file's
sha256 and lapses when the file changes. Until then only the keys that tighten apply
(declared on their fields in `loopd.config.schema`: added `[approvals] deny`/`ask`
rules, lower limits and approval timeout, a stricter `[defaults] mode`); the others
are ignored and named in `Config.workspace`, so the person is told.

Environment: ANTHROPIC_API_KEY, ANTHROPIC_BASE_URL, OPENAI_API_KEY, OPENAI_BASE_URL,
OLLAMA_HOST (read by the catalog builder to discover native providers) and LOOPD_HOME
(the data directory; default the platform's user data dir).

The file format (every key optional; unknown keys are errors):

    [defaults]
    runtime = "anthropic"      # a catalog entry name, or a harness name
    model = "sonnet"           # model id or alias within that runtime
    effort = "medium"
    mode = "ask"                # plan | ask | accept_edits | full_auto

    [providers.groq]           # a native-engine endpoint; becomes runtime "groq"
    kind = "openai_chat"       # anthropic | openai_chat | openai_responses
    base_url = "https://api.groq.com/openai/v1"
    api_key_env = "GROQ_API_KEY"   # the variable holding the key, never the key
    anthropic_version = "2023-06-01"  # kind = "anthropic" only
    models = ["llama-3.3-70b", { id = "qwen-2.5-coder-32b", aliases = ["qwen"] }]
                               # a table may also set context_window = 32768 (tokens)
    default_model = "qwen"
    efforts = ["off", "low", "medium", "high"]
    default_effort = "off"
    open_models = true         # accept model ids not listed (default: no list given)

    [runtimes.claude]          # a catalog entry
    harness = "claude"         # native | claude | codex | acp
    command = "/opt/claude/bin/claude"   # path or name on PATH (not for native)
    args = []
    env = { CLAUDE_CONFIG_DIR = "/tmp/claude" }
    profile = "claude"         # backend key; default: the harness
    provider = "groq"          # native only: a [providers.*] or discovered provider
    models / default_model / efforts / default_effort / open_models   as above

    [limits]                   # native engine, per turn; 0 turns a check off
    max_iterations = 25
    max_tool_calls = 100
    max_parallel = 8           # at least 1
    max_result_bytes = 100000
    max_identical_calls = 3
    turn_token_ceiling = 0     # 0 = unlimited
    turn_cost_ceiling = 0.0    # USD per turn where the price is known; 0 = unlimited
    stream_idle_seconds = 60   # no data from the model this long: stalled (retried once)
    max_output_chars = 30000   # a command's output for the model: head + tail
    max_shown_chars = 64000    # a tool's output for the editor and the store: head +
                               # tail; a command's full output goes to a file it names

    [approvals]                # rule strings, interpreted by loopd.policy
    allow = []
    ask = []
    deny = []
    timeout_seconds = 600      # an unanswered question is a rejection after this

    [sandbox]
    allow_unix_sockets = []    # socket paths commands may connect to (default: none)
    home_readable = []         # home entries shown to commands ("~/.m2"), read-only
    allowed_domains = ["pypi.org", "*.pythonhosted.org", "registry.npmjs.org:443"]
                               # set (even to []): commands reach the network only
                               # through loopd's proxy, by domain; others are asked
    denied_domains = []        # refused whatever else says so; deny wins (an
                               # untrusted workspace file may add to it, never allow)

    [agents.explore]           # an agent role's part of the catalog: `main` is the
                               # session's agent, `explore` the explore tool's child
    runtimes = ["groq", "fast"]  # the entries it may run on (default: all; explore:
                               # all native ones); sessions offer only main's
    default = "groq"           # default: the first of runtimes; for explore without
                               # runtimes, the session's own runtime; for main, the
                               # [defaults] runtime
    model = "llama-3.3-70b"    # on its default runtime (main: [defaults] model)
    effort = "low"             # on its default runtime (main: [defaults] effort)

    [delegate]                 # the older spelling of [agents.explore] default/model
    runtime = "groq"           # (where both are set, [agents.explore] wins)
    model = "llama-3.3-70b"

    [done]                     # the definition of done (native engine)
    enabled = false            # re-enter on unmet criteria (off: check and report only)
    protected = ["tests/**"]   # paths that ARE the measurement; writes are reported
    timeout_seconds = 300      # per criterion
    max_stall_cycles = 2       # checks without progress before a turn stops incomplete

    [[done.criteria]]          # a workspace file's criteria run only once it is trusted
    name = "tests"
    command = "pytest -q"      # run like the bash tool: in the sandbox, network off
    exit_code = 0
"""

from loopd.config.gate import UNTRUSTED_KEYS
from loopd.config.load import Env, EnvSettings, load_config, read_env, workspace_config_file
from loopd.config.merge import Merged, merge_layers
from loopd.config.parse import parse_config
from loopd.config.schema import (
    EXPLORE_AGENT,
    MAIN_AGENT,
    AgentConfig,
    Approvals,
    Choices,
    Config,
    Defaults,
    Delegate,
    Done,
    DoneCriterion,
    Harness,
    Limits,
    ModelSpec,
    ProviderConfig,
    ProviderKind,
    RuntimeConfig,
    SandboxSettings,
    TrustState,
    WorkspaceStatus,
)
from loopd.config.table import ConfigFileError
from loopd.config.trust import TrustStore, WorkspaceFile, read_workspace_file
from loopd.home import data_dir, user_config_file

__all__ = [
    "EXPLORE_AGENT",
    "MAIN_AGENT",
    "UNTRUSTED_KEYS",
    "AgentConfig",
    "Approvals",
    "Choices",
    "Config",
    "ConfigFileError",
    "Defaults",
    "Delegate",
    "Done",
    "DoneCriterion",
    "Env",
    "EnvSettings",
    "Harness",
    "Limits",
    "Merged",
    "ModelSpec",
    "ProviderConfig",
    "ProviderKind",
    "RuntimeConfig",
    "SandboxSettings",
    "TrustState",
    "TrustStore",
    "WorkspaceFile",
    "WorkspaceStatus",
    "data_dir",
    "load_config",
    "merge_layers",
    "parse_config",
    "read_env",
    "read_workspace_file",
    "user_config_file",
    "workspace_config_file",
]
