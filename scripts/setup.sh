#!/usr/bin/env bash
# Installs everything loopd's demo and test suite need on a fresh Debian machine:
# system packages, uv, the locked Python environment (.venv), the npm packages
# the cross-implementation tests use, and what the VS Code extension's tests use
# (Debian's chromium, Node 24 and code-server from npm, its npm packages).
# Idempotent: a second run changes nothing and takes seconds.
set -euo pipefail
cd "$(dirname "$0")/.."

need_apt=()
command -v rg >/dev/null || need_apt+=(ripgrep)
command -v bwrap >/dev/null || need_apt+=(bubblewrap)
command -v npm >/dev/null || need_apt+=(nodejs npm)
# The VS Code extension's tests: headless Chromium, and the build packages
# code-server's native modules expect (libkrb5-dev: kerberos fails without it).
command -v chromium >/dev/null || need_apt+=(chromium)
for pkg in build-essential pkg-config libx11-dev libxkbfile-dev libsecret-1-dev libkrb5-dev; do
  dpkg -s "$pkg" >/dev/null 2>&1 || need_apt+=("$pkg")
done
if [ ${#need_apt[@]} -gt 0 ] && command -v apt-get >/dev/null; then
  SUDO=""; [ "$(id -u)" = 0 ] || SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${need_apt[@]}" >/dev/null
fi

UV_VERSION=0.13.9
if ! command -v uv >/dev/null || [ "$(uv --version | cut -d' ' -f2)" != "$UV_VERSION" ]; then
  python3 -m pip install -q "uv==$UV_VERSION"
fi

export UV_PYTHON_DOWNLOADS=never
uv sync --frozen --quiet

if [ -f tests/clients/package-lock.json ]; then
  (cd tests/clients && npm ci --silent --no-audit --no-fund)
fi

# Node 24 and code-server (cached under ~/.cache/loopd), then the extension's npm
# packages (npm ci only when its lock changed).
vscode-extension/scripts/deps.sh >/dev/null
