# The two commands a newcomer needs: `make demo` and `make test`.
# Both set everything up first (scripts/setup.sh is idempotent).
.PHONY: setup demo test test-vscode lint bench

setup:
	@scripts/setup.sh

demo: setup
	@.venv/bin/loopd demo

lint: setup
	.venv/bin/ruff check server tests benchmarks
	.venv/bin/ruff format --check server tests benchmarks
	.venv/bin/mypy

test: lint
	.venv/bin/pytest -q
	@vscode-extension/scripts/test.sh

# The VS Code extension alone: type check, lint, unit, protocol and browser tests,
# then the packaged .vsix in a real VS Code (code-server).
test-vscode: setup
	@vscode-extension/scripts/test.sh

bench: setup
	.venv/bin/python -m benchmarks
