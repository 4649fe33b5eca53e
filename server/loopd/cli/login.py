"""`loopd login` and `loopd logout`: set up a model provider from a terminal.

This is what an editor's "log in" runs (ACP's terminal auth method): pick a
provider, paste a key (checked with one cheap request, the endpoint's model list),
pick a default model. What is chosen is stored by `loopd.config.login`, never in a
config file; the environment keeps precedence over it. A provider's endpoint that
the environment already names (`ANTHROPIC_BASE_URL`, say) is the one checked.
"""

from __future__ import annotations

import argparse
import getpass
import os
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TextIO

from loopd.config import data_dir
from loopd.config.login import Login, forget_login, write_login
from loopd.executables import find_program
from loopd.protocol.errors import AuthError, ConfigError, ProviderError
from loopd.providers import anthropic, openai_chat
from loopd.providers.factory import ProviderKind, ollama_base_url
from loopd.providers.listing import NoModelList, list_models

Ask = Callable[[str], str]
KEY_PROMPT = "API key (input hidden; empty for none): "


@dataclass(frozen=True, slots=True)
class Choice:
    """One way to get a runtime: an endpoint with a key, or a CLI logged in."""

    label: str
    runtime: str  # the catalog entry it gives
    kind: ProviderKind | None = None  # None: a foreign CLI
    key_var: str | None = None
    url_var: str | None = None
    default_url: str = ""
    asks_url: bool = False
    cli: str | None = None


CHOICES = (
    Choice(
        "Anthropic (API key)", "anthropic", "anthropic", "ANTHROPIC_API_KEY",
        "ANTHROPIC_BASE_URL", anthropic.DEFAULT_BASE_URL,
    ),
    Choice(
        "OpenAI (API key)", "openai", "openai_chat", "OPENAI_API_KEY", "OPENAI_BASE_URL",
        openai_chat.DEFAULT_BASE_URL,
    ),
    Choice(
        "An OpenAI-compatible server (vLLM, llama.cpp, LM Studio, a gateway)", "openai",
        "openai_chat", "OPENAI_API_KEY", "OPENAI_BASE_URL", asks_url=True,
    ),
    Choice(
        "Ollama", "ollama", "openai_chat", None, "OLLAMA_HOST", "127.0.0.1:11434",
        asks_url=True,
    ),
    Choice("Claude Code (the claude CLI, logged in)", "claude", cli="claude"),
    Choice("Codex (the codex CLI, logged in)", "codex", cli="codex"),
)  # fmt: skip


def login_command(args: argparse.Namespace) -> int:
    return login(os.environ)


def logout_command(args: argparse.Namespace) -> int:
    return logout(os.environ)


def login(env: Mapping[str, str], out: TextIO = sys.stderr) -> int:
    if not sys.stdin.isatty():
        raise ConfigError("`loopd login` asks questions: run it in a terminal")
    chosen = ask_login(env, input, getpass.getpass, out)
    path = write_login(data_dir(env), chosen)
    out.write(f"Saved to {path} (readable only by you). `loopd logout` forgets it.\n")
    shadowed = [name for name in chosen.env if env.get(name)]
    if shadowed:
        out.write(f"Note: the environment sets {', '.join(shadowed)}, which wins.\n")
    return 0


def logout(env: Mapping[str, str], out: TextIO = sys.stderr) -> int:
    forgotten = forget_login(data_dir(env))
    out.write("Logged out: the stored login is gone.\n" if forgotten else "Not logged in.\n")
    return 0


def ask_login(env: Mapping[str, str], ask: Ask, ask_secret: Ask, out: TextIO) -> Login:
    """The dialogue itself, over injected prompts: which provider, its endpoint, a
    key that the endpoint accepts, a default model."""
    choice = _pick(ask, out, "Which model provider?", [c.label for c in CHOICES])
    chosen = CHOICES[choice]
    if chosen.cli is not None:
        if find_program(chosen.cli, env.get("PATH", os.defpath), outside=(os.getcwd(),)) is None:
            raise ConfigError(f"`{chosen.cli}` is not on PATH: install it and log in there first")
        return Login(defaults={"runtime": chosen.runtime})
    assert chosen.kind is not None
    url = _endpoint(env, chosen, ask)
    base = ollama_base_url(url) if chosen.runtime == "ollama" else url
    key, models = _checked_key(chosen, base, ask, ask_secret, out)
    asked = ((chosen.key_var, key), (chosen.url_var if chosen.asks_url else None, url))
    stored = {name: value for name, value in asked if name and value}
    return Login(env=stored, defaults=_defaults(chosen, _model(models, ask, out)))


def _endpoint(env: Mapping[str, str], chosen: Choice, ask: Ask) -> str:
    named = env.get(chosen.url_var or "") or chosen.default_url
    if not chosen.asks_url:
        return named
    answer = ask(f"Server URL [{named}]: " if named else "Server URL: ").strip()
    if not (answer or named):
        raise ConfigError("a server URL is needed")
    return answer or named


def _checked_key(
    chosen: Choice, base: str, ask: Ask, ask_secret: Ask, out: TextIO
) -> tuple[str, tuple[str, ...] | None]:
    """A key the endpoint accepts (three tries), and the models it lists (`None`
    when it has no list, a 404: the key then goes unchecked)."""
    assert chosen.kind is not None
    for _ in range(3):
        key = (
            ask_secret("API key (input hidden; empty for none): ").strip() if chosen.key_var else ""
        )
        try:
            return key, list_models(chosen.kind, base, key)
        except AuthError as err:
            out.write(f"The key was refused: {err}\n")
        except NoModelList as err:
            out.write(f"The key cannot be checked: {err}. The first prompt will tell.\n")
            return key, None
        except ProviderError as err:
            raise ConfigError(f"could not check the key: {err}") from err
    raise ConfigError("no key was accepted")


def _model(models: Sequence[str] | None, ask: Ask, out: TextIO) -> str | None:
    if models is None:  # the server has no list: the person names the model
        return ask("Model id, as the server names it (empty: decide later): ").strip() or None
    if not models:
        answer = ask("The server lists no models. Model id (empty: decide later): ").strip()
        return answer or None
    shown = list(models[:20])
    return shown[_pick(ask, out, "Default model?", shown)]


def _pick(ask: Ask, out: TextIO, question: str, labels: Sequence[str]) -> int:
    out.write(question + "\n")
    for number, label in enumerate(labels, 1):
        out.write(f"  {number}) {label}\n")
    while True:
        answer = ask(f"Choose 1-{len(labels)} [1]: ").strip() or "1"
        if answer.isdigit() and 1 <= int(answer) <= len(labels):
            return int(answer) - 1
        out.write(f"Type a number from 1 to {len(labels)}.\n")


def _defaults(chosen: Choice, model: str | None) -> dict[str, str]:
    return {"runtime": chosen.runtime} | ({"model": model} if model else {})
