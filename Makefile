# The few verbs a newcomer needs. `make run` sets up and serves; `make test` runs the whole suite.
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
BIN := $(VENV)/bin
RUNTIME_STAMP := $(VENV)/.ragmeta-runtime
DEV_STAMP := $(VENV)/.ragmeta-dev
HOST ?= 127.0.0.1
PORT ?= 8000

.PHONY: setup setup-runtime compile run serve migrate test lint format openapi bench fuzz load clean

# Everything: what serving needs plus the development and test tools (CI, `make test`, `make lint`).
setup: $(DEV_STAMP)

# What serving needs, no test tools: `make run`, `make serve`, `make migrate`.
setup-runtime: $(RUNTIME_STAMP)

# Pinned dependencies (torch is the CPU 2.13.0 build), then the project itself without resolving again. uv
# installs the lock from the sources pip is configured with (scripts/install_locked.py), in about half pip's
# time; pip does it where uv cannot be installed.
$(RUNTIME_STAMP): requirements.lock pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	( $(BIN)/python -m pip install --quiet uv==0.13.8 && $(BIN)/python scripts/install_locked.py $(BIN)/python requirements.lock ) \
	  || $(BIN)/python -m pip install --quiet -r requirements.lock
	$(BIN)/python -m pip install --quiet --no-deps --no-build-isolation -e .
	touch $(RUNTIME_STAMP)

# Both lists in one resolution, so the development tools cannot move a pinned runtime package.
$(DEV_STAMP): $(RUNTIME_STAMP) requirements-dev.lock
	$(BIN)/python scripts/install_locked.py $(BIN)/python requirements.lock requirements-dev.lock \
	  || $(BIN)/python -m pip install --quiet -r requirements.lock -r requirements-dev.lock
	touch $(DEV_STAMP)

# The service's own bytecode, written ahead (only for the files changed since): a start then reads it even
# where imports write none (PYTHONDONTWRITEBYTECODE, a read-only tree), instead of compiling every module.
compile: setup-runtime
	$(BIN)/python -m compileall -q app services

migrate: setup-runtime
	$(BIN)/python -m app.cli migrate

# The demo runs open (no sign-in) on loopback and says so; `ragmeta run` refuses to be open on any other
# address. RAGMETA_AUTH__ENABLED=true make run turns authentication on.
run: setup-runtime compile
	RAGMETA_AUTH__ENABLED=$${RAGMETA_AUTH__ENABLED:-false} $(BIN)/python -m app.cli run --host $(HOST) --port $(PORT)

serve: setup-runtime compile
	$(BIN)/python -m app.cli serve --host $(HOST) --port $(PORT)

test: setup compile
	$(BIN)/python -m pytest $(PYTEST_ARGS)

lint: setup
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy app services ragmeta

format: setup
	$(BIN)/ruff check --fix .
	$(BIN)/ruff format .

openapi: setup-runtime
	$(BIN)/python scripts/openapi.py

bench: setup
	$(BIN)/python bench/retrieval.py
	$(BIN)/python bench/report.py
	$(BIN)/python bench/metrics.py
	$(BIN)/python bench/report_latency.py

# schemathesis (every check, every phase) against the served app on a fresh SQLite store.
fuzz: setup compile
	$(BIN)/python scripts/fuzz_api.py $(FUZZ_ARGS)

# 50 clients for 60 s mixing writes and report reads (SQLite; PostgreSQL with RAGMETA_BENCH_PG_URL set).
load: setup
	$(BIN)/python bench/load.py $(LOAD_ARGS)

clean:
	rm -rf $(VENV) var
