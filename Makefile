# The two commands a newcomer needs: `make demo` and `make test`.
# Both set everything up first (scripts/setup.sh is idempotent). Only `make test`
# installs the npm test clients (only when tests/clients/package-lock.json changed)
# and what the VS Code extension's tests need (chromium, Node 24, code-server).
.PHONY: setup test-clients vscode-deps demo test test-vscode lint bench

setup:
	@scripts/setup.sh

test-clients: setup
	@scripts/setup.sh --test-clients

vscode-deps: setup
	@scripts/setup.sh --vscode

demo: setup
	@.venv/bin/loopd demo

lint: setup
	.venv/bin/ruff check server tests benchmarks
	.venv/bin/ruff format --check server tests benchmarks
	.venv/bin/mypy
	.venv/bin/deptry .

test: lint test-clients vscode-deps
	.venv/bin/pytest -q
	LOOPD_DAEMON=on .venv/bin/pytest -q tests/e2e/acp tests/e2e/lsp tests/e2e/acp_runtime
	@vscode-extension/scripts/test.sh

# The VS Code extension alone: type check, lint, unit, protocol and browser tests,
# then the packaged .vsix in a real VS Code (code-server).
test-vscode: vscode-deps
	@vscode-extension/scripts/test.sh

bench: setup
	.venv/bin/python -m benchmarks
