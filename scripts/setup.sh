#!/usr/bin/env bash
# Installs everything loopd's demo and test suite need on a fresh Debian machine:
# system packages, uv, the locked Python environment (.venv) and the npm packages
# the cross-implementation tests use. Idempotent: a second run changes nothing.
set -euo pipefail
cd "$(dirname "$0")/.."

need_apt=()
command -v rg >/dev/null || need_apt+=(ripgrep)
command -v bwrap >/dev/null || need_apt+=(bubblewrap)
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
