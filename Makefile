# tfreg's developer entry points. CI runs `make test` (through .ci/run), so these stay true.
#
#   make run    build and serve the registry locally over HTTPS (./registry-data)
#   make token  create an access token for the local registry (printed as the last line)
#   make test   every check: formatting, lints, unit, router and end-to-end tests
#   make lint   formatting and clippy only

SHELL := bash
.SHELLFLAGS := -eu -o pipefail -c

# Builds are cached outside the clone, so fresh clones (and CI) reuse earlier work.
export CARGO_TARGET_DIR ?= $(HOME)/.cache/tfreg/target
CARGO ?= cargo
DATA ?= ./registry-data
LISTEN ?= 127.0.0.1:8443
# Extra flags for `tfreg serve`, e.g. ARGS=--public or ARGS="--hostname registry.example.test"
ARGS ?=
# Python tools of the tests (moto's S3/DynamoDB emulator, cfn-lint, SAM CLI), from PyPI.
VENV ?= .venv
PYTHON ?= python3

.PHONY: run token test lint fmt build check-tools venv

## Serve the registry from $(DATA) on https://$(LISTEN)
run:
	$(CARGO) run --locked -p tfreg-cli --bin tfreg -- serve --data $(DATA) --listen $(LISTEN) $(ARGS)

## Create an access token for $(DATA) (ARGS="--namespace acme --expires 90d" to restrict it)
token:
	@$(CARGO) run --quiet --locked -p tfreg-cli --bin tfreg -- token create --data $(DATA) $(ARGS)

## Every check CI runs
test: check-tools venv lint
	$(CARGO) build --locked --workspace --bins
	$(CARGO) test --locked --workspace

## The test virtualenv; reinstalled when tests/requirements.txt changes
venv: $(VENV)/.installed
$(VENV)/.installed: tests/requirements.txt
	@command -v $(PYTHON) >/dev/null || { echo "$(PYTHON) is missing: install Python 3.9+ (apt-get install python3 python3-venv)"; exit 1; }
	$(PYTHON) -m venv $(VENV)
	$(VENV)/bin/pip install --quiet --disable-pip-version-check -r tests/requirements.txt
	touch $@

## Formatting and lints
lint:
	$(CARGO) fmt --all -- --check
	$(CARGO) clippy --locked --workspace --all-targets -- -D warnings

## Format the code
fmt:
	$(CARGO) fmt --all

## Build the tfreg binary (release)
build:
	$(CARGO) build --locked --release -p tfreg-cli --bin tfreg
	@echo "built $(CARGO_TARGET_DIR)/release/tfreg"

## Tools the tests need, with how to get them
check-tools:
	@command -v $(CARGO) >/dev/null || { echo "cargo is missing: install Rust from https://rustup.rs"; exit 1; }
	@command -v terraform >/dev/null || { echo "terraform is missing: the end-to-end tests drive the real CLI. Install Terraform 1.5+ (https://developer.hashicorp.com/terraform/install)"; exit 1; }
	@command -v gpg >/dev/null || { echo "gpg is missing: the provider tests sign releases with it. Install GnuPG (apt-get install gnupg)"; exit 1; }
	@$(CARGO) fmt --version >/dev/null 2>&1 || { echo "rustfmt is missing: rustup component add rustfmt"; exit 1; }
	@$(CARGO) clippy --version >/dev/null 2>&1 || { echo "clippy is missing: rustup component add clippy"; exit 1; }
