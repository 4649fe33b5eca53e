# The two commands a newcomer needs: `make demo` and `make test`.
# Both set everything up first (scripts/setup.sh is idempotent). Only `make test`
# installs the npm test clients, and only when tests/clients/package-lock.json changed.
.PHONY: setup test-clients demo test lint bench

setup:
	@scripts/setup.sh

test-clients: setup
	@scripts/setup.sh --test-clients

demo: setup
	@.venv/bin/loopd demo

lint: setup
	.venv/bin/ruff check server tests benchmarks
	.venv/bin/ruff format --check server tests benchmarks
	.venv/bin/mypy

test: lint test-clients
	.venv/bin/pytest -q

bench: setup
	.venv/bin/python -m benchmarks
