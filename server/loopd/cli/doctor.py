"""`loopd doctor`: what this machine gives loopd, without a turn.

Shows the config files (found or not, and trusted or not), which credentials are set
(never their values: a variable is `set` or `not set`; endpoints are shown without
user info or query), the tools the native engine uses (ripgrep, bubblewrap), the
shared daemon (running or not, and how it is started), what `loopd serve` serves
and to whom, the runtime catalog, the sandbox tier and network by domain (its
lists, and whether this tier enforces them).
Exits 1 when no runtime works, 2 when a config file is wrong, so a script or a setup
check can rely on it.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, assert_never

from loopd.cli.exits import EXIT_FAILED, EXIT_OK, EXIT_USAGE
from loopd.cli.render import escape
from loopd.executables import find_program, process_path

if TYPE_CHECKING:
    from loopd.config import Config
    from loopd.policy.tiers import Tier

KEY_VARIABLES = ("ANTHROPIC_API_KEY", "OPENAI_API_KEY")
ENDPOINT_VARIABLES = ("ANTHROPIC_BASE_URL", "OPENAI_BASE_URL", "OLLAMA_HOST")
TOOLS = (("rg", "ripgrep: fast grep"), ("bwrap", "bubblewrap: the strongest sandbox tier"))


def doctor(args: argparse.Namespace) -> int:
    from loopd import __version__
    from loopd.catalog import catalog_to_text, discover_catalog
    from loopd.cli.trust import tell_workspace
    from loopd.config import Config, ConfigFileError, data_dir, load_config
    from loopd.sandbox.probe import probe_sandbox

    env = dict(os.environ)
    cwd = Path.cwd()
    print(f"loopd {__version__} (Python {sys.version.split()[0]})")
    print(f"data: {escape(str(data_dir(env)))}")
    try:
        config = load_config(env, cwd)
        problem = None
        tell_workspace(config)
    except ConfigFileError as err:
        config, problem = Config(), err
    print(config_files(env, cwd, config))
    if problem is not None:
        print(f"  error: {escape(str(problem))}")
    print(credentials(env, config))
    print(tools())
    print(daemon_state(env))
    print(escape(serving_state(env), multiline=True))
    build = discover_catalog(config, env, os.getcwd())
    print(escape(catalog_to_text(build.catalog, build.skipped), multiline=True))
    probe = probe_sandbox(env=env)
    print(probe.report())
    print(network(config, probe.best))
    if problem is not None:
        return EXIT_USAGE
    return EXIT_OK if len(build.catalog.names) else EXIT_FAILED


def config_files(env: Mapping[str, str], cwd: Path, config: Config) -> str:
    """The two config files, lowest precedence first, each found or not."""
    from loopd.config import user_config_file, workspace_config_file

    lines = ["config files:"]
    for label, path in (("user", user_config_file(env)), ("workspace", workspace_config_file(cwd))):
        state = "found" if path.is_file() else "not found"
        trust = trust_note(config) if label == "workspace" and path.is_file() else ""
        lines.append(f"  {label:<10} {escape(str(path))}  ({state}{trust})")
    return "\n".join(lines)


def trust_note(config: Config) -> str:
    """Whether the workspace file is trusted, as `, trusted` / `, untrusted` /
    `, changed` (since it was trusted)."""
    return f", {config.workspace.state}" if config.workspace is not None else ""


def credentials(env: Mapping[str, str], config: Config) -> str:
    """Which credential variables are set, never their values; the endpoints set,
    without the parts of a URL that may carry a secret."""
    from loopd.catalog.entry import public_url

    names = list(KEY_VARIABLES)
    names += [p.api_key_env for p in config.providers.values() if p.api_key_env]
    lines = ["credentials:"]
    for name in dict.fromkeys(names):
        lines.append(f"  {name:<22} {'set' if env.get(name) else 'not set'}")
    for name in ENDPOINT_VARIABLES:
        if env.get(name):
            value = env[name]
            shown = public_url(value) if "://" in value else value.partition("@")[2] or value
            lines.append(f"  {name:<22} {escape(shown)}")
    return "\n".join(lines)


def daemon_state(env: Mapping[str, str]) -> str:
    """The daemon editors share: whether it runs (pid, version, editors) and what
    starts it (editors on demand, or the systemd unit of `loopd daemon enable`)."""
    from loopd.cli.daemon import daemon_status
    from loopd.daemon import unit

    status = daemon_status()
    if "refused" in status:
        line = f"refused: {escape(status['refused'])}"
    elif "error" in status:
        line = f"not answering: {escape(status['error'])}"
    elif status["running"]:
        line = (
            f"running, pid {status['pid']}, loopd {status['version']},"
            f" {status['connections']} editor(s)"
        )
    else:
        line = "not running"
    found = unit.state(env)
    if found.ours:
        how = "enabled" if found.enabled else "not enabled"
        started = f"by the systemd unit {escape(str(found.path))} ({how})"
    else:
        started = "on demand by editors; exits when idle (`loopd daemon enable` keeps it up)"
    return f"daemon: {line}\n  started: {started}"


def serving_state(env: Mapping[str, str]) -> str:
    from loopd.remote.status import describe

    return describe(env)


def tools() -> str:
    lines = ["tools:"]
    for command, what in TOOLS:
        found = find_program(command, process_path(), outside=(os.getcwd(),))
        lines.append(f"  {command:<6} {escape(found) if found else 'not found'}  ({what})")
    return "\n".join(lines)


def ungranted(tier: Tier) -> str:
    """What network a command has in `tier` while none is granted, as the README's
    tier table says: only the namespaced tiers take all of it away."""
    from loopd.policy.tiers import Tier

    match tier:
        case Tier.BWRAP_LANDLOCK | Tier.BWRAP | Tier.NETNS:
            return "commands have no network unless it is granted whole"
        case Tier.LANDLOCK:
            return (
                "commands have no TCP unless the network is granted whole (from Landlock "
                "ABI 4), UDP and other protocols always"
            )
        case Tier.NONE:
            return "commands always have the network (the none tier contains nothing)"
        case unknown:
            assert_never(unknown)


def network(config: Config, tier: Tier) -> str:
    """Network by domain: off, on with its lists, or configured where this tier cannot
    hold it (there a command has what `ungranted` says)."""
    settings = config.sandbox
    if not settings.by_domain:
        return (
            f"network by domain: off ({ungranted(tier)}; "
            "set [sandbox] allowed_domains to allow hosts one by one)"
        )
    if tier.binds_proxy:
        state = f"on ({tier} tier: loopd's proxy is commands' only way out)"
    else:
        state = (
            f"configured, NOT enforced in the {tier} tier (it cannot confine commands to "
            f"the proxy): {ungranted(tier)}"
        )
    lines = [f"network by domain: {state}"]
    for label, rules in (
        ("allowed", settings.allowed_domains or ()),
        ("denied", settings.denied_domains),
    ):
        shown = ", ".join(escape(r) for r in rules) if rules else "(none)"
        lines.append(f"  {label:<8} {shown}")
    lines.append(
        "  unknown hosts are asked about (refused with nobody to ask: `loopd run` without --yes)"
    )
    return "\n".join(lines)
