# The two commands a newcomer needs: `make demo` and `make test`.
# Both set everything up first (scripts/setup.sh is idempotent).
.PHONY: setup demo test lint bench

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

bench: setup
	.venv/bin/python -m benchmarks
