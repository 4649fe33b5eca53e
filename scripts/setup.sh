#!/usr/bin/env bash
# Sets up what `make demo` needs on a fresh Debian/Ubuntu machine: the optional system
# tools (ripgrep, bubblewrap), uv, and the locked Python environment (.venv).
# `scripts/setup.sh --test-clients` also installs what the tests alone use: zsh and
# fish (apt; the completion tests parse their scripts) and the npm packages the
# cross-client tests use (tests/clients), only when their lock file changed since the
# last install. A failed install step says what it was installing and shows the
# tool's own error (scripts/quietly.sh).
# `scripts/setup.sh --vscode` installs what the VS Code extension's tests use:
# Debian's chromium and the build packages code-server expects (apt), Node 24 and
# code-server from npm (cached under ~/.cache/loopd), and the extension's npm
# packages (npm ci only when vscode-extension/package-lock.json changed).
# Idempotent: a second run changes nothing.
#
# uv is never pip-installed into the system Python (Debian marks it
# externally-managed): a uv already on PATH at the pinned version is used, otherwise
# it goes into a private venv under .tools/ and is called by its full path, so pyenv
# shims or a stale PATH cannot hide it.
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=quietly.sh
. scripts/quietly.sh

UV_VERSION=0.13.9
TOOLS=.tools
UV_VENV=$TOOLS/uv-venv
CLIENTS=tests/clients
CLIENTS_STAMP=$CLIENTS/node_modules/.loopd-lock.sha256

say() { printf 'setup: %s\n' "$*" >&2; }
die() { say "$*"; exit 1; }

# Root runs apt-get itself; anyone else through sudo, when sudo is there.
as_root() {
  if [ "$(id -u)" = 0 ]; then "$@"
  elif command -v sudo >/dev/null; then sudo "$@"
  else return 1
  fi
}

apt_install() {
  command -v apt-get >/dev/null || return 1
  say "installing $* (apt-get; waits up to 5 minutes if another apt or dpkg holds the lock)"
  as_root apt-get -o DPkg::Lock::Timeout=300 update -qq &&
    as_root env DEBIAN_FRONTEND=noninteractive \
      apt-get -o DPkg::Lock::Timeout=300 install -y -qq "$@" >/dev/null
}

system_tools() {
  local missing=()
  command -v rg >/dev/null || missing+=(ripgrep)
  command -v bwrap >/dev/null || missing+=(bubblewrap)
  [ ${#missing[@]} -eq 0 ] && return 0
  apt_install "${missing[@]}" ||
    say "optional, not installed: ${missing[*]} (loopd works without them; \`loopd doctor\` says what it uses)"
}

uv_at_version() {
  [ -x "$1" ] || command -v "$1" >/dev/null || return 1
  [ "$("$1" --version 2>/dev/null | cut -d' ' -f2)" = "$UV_VERSION" ]
}

# A Python >= 3.8 with venv and ensurepip, to hold uv (loopd itself needs >= 3.11).
venv_python() {
  local py
  for py in python3 /usr/bin/python3; do
    if "$py" -c 'import sys, venv, ensurepip; sys.exit(sys.version_info < (3, 8))' 2>/dev/null; then
      command -v "$py"; return 0
    fi
  done
  return 1
}

find_uv() {
  if uv_at_version "$UV_VENV/bin/uv"; then echo "$UV_VENV/bin/uv"; return; fi
  local on_path
  on_path=$(command -v uv || true)
  if [ -n "$on_path" ] && uv_at_version "$on_path"; then echo "$on_path"; return; fi
  local py
  if ! py=$(venv_python); then
    apt_install python3-venv ||
      die "uv needs Python's venv module: install it with \`sudo apt-get install python3-venv\` (Debian/Ubuntu), or install uv $UV_VERSION yourself (pipx install uv==$UV_VERSION), then run this again"
    py=$(venv_python) || die "python3 -m venv still does not work after installing python3-venv"
  fi
  say "installing uv $UV_VERSION into $UV_VENV (a private venv; the system Python is left alone)"
  rm -rf "$UV_VENV"
  mkdir -p "$TOOLS"
  "$py" -m venv "$UV_VENV"
  "$UV_VENV/bin/python" -m pip install -q --disable-pip-version-check "uv==$UV_VERSION"
  uv_at_version "$UV_VENV/bin/uv" || die "uv $UV_VERSION did not install into $UV_VENV"
  echo "$UV_VENV/bin/uv"
}

# The locked environment. uv trusts the system's certificate store (as apt, curl and
# pip do), so a machine behind a TLS-inspecting proxy with its CA installed works.
python_env() {
  local uv=$1
  if ! UV_PYTHON_DOWNLOADS=never UV_SYSTEM_CERTS=${UV_SYSTEM_CERTS:-1} "$uv" sync --frozen --quiet; then
    die "uv could not build .venv (its error is above); loopd needs Python >= 3.11 on PATH (Debian 12's python3 is 3.11)"
  fi
}

test_clients() {
  [ -f "$CLIENTS/package-lock.json" ] || return 0
  local want
  want=$(sha256sum "$CLIENTS/package-lock.json" | cut -d' ' -f1)
  if [ -f "$CLIENTS_STAMP" ] && [ "$(cat "$CLIENTS_STAMP")" = "$want" ]; then
    return 0
  fi
  if ! command -v npm >/dev/null; then
    say "npm not found: the tests that drive the pinned Claude Code and Codex CLIs will be skipped (install Node.js 20+ with npm to run them)"
    return 0
  fi
  say "installing the npm test clients ($CLIENTS/package-lock.json changed)"
  (cd "$CLIENTS" && quietly "the npm test clients ($CLIENTS)" npm ci --no-audit --no-fund)
  echo "$want" >"$CLIENTS_STAMP"
}

# The shells whose completion scripts the tests parse (bash is there already).
test_shells() {
  local missing=()
  command -v zsh >/dev/null || missing+=(zsh)
  command -v fish >/dev/null || missing+=(fish)
  [ ${#missing[@]} -eq 0 ] && return 0
  apt_install "${missing[@]}" || die "the completion tests need: ${missing[*]} (apt-get install them)"
}

vscode_deps() {
  local missing=() pkg
  command -v chromium >/dev/null || missing+=(chromium)
  # code-server's native modules: kerberos fails to install without libkrb5-dev.
  for pkg in build-essential pkg-config libx11-dev libxkbfile-dev libsecret-1-dev libkrb5-dev; do
    dpkg -s "$pkg" >/dev/null 2>&1 || missing+=("$pkg")
  done
  if [ ${#missing[@]} -gt 0 ]; then
    apt_install "${missing[@]}" || die "the VS Code extension's tests need: ${missing[*]} (apt-get install them)"
  fi
  command -v npm >/dev/null || apt_install nodejs npm || die "the VS Code extension's tests need npm (Node.js 20+)"
  vscode-extension/scripts/deps.sh >/dev/null
}

case "${1:-}" in
  "")
    system_tools
    uv=$(find_uv)
    python_env "$uv"
    ;;
  --test-clients)
    test_shells
    test_clients
    ;;
  --vscode)
    vscode_deps
    ;;
  *)
    die "usage: scripts/setup.sh [--test-clients | --vscode]"
    ;;
esac
