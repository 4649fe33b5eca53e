#!/usr/bin/env bash
# The extension's whole suite, as `make test` runs it: type check, lint, unit,
# protocol (real `loopd lsp`) and browser tests (`npm test`), then the packaged
# .vsix in a real VS Code (code-server). All under Node 24.
set -euo pipefail
cd "$(dirname "$0")/.."
node_bin="$(scripts/deps.sh)"
export PATH="$node_bin:$PATH"
npm test
npm run test:vscode
