# tfreg's developer entry points. CI runs `make test` (through .ci/run), so these stay true.
#
#   make run    build and serve the registry locally over HTTPS (./registry-data)
#   make token  create an access token for the local registry (printed as the last line)
#   make install  put `tfreg` on the PATH (~/.cargo/bin; AWS=1 with the AWS shape's commands)
#   make test   the gate CI runs: formatting, lints, unit, router and end-to-end tests (not the deep tier)
#   make test-deep  the deep tier: the heavy tests at full size, the Lambda zips, packaging
#   make lint   formatting and clippy only
#   make stack  the AWS stack on this machine: functions, API Gateway and S3/DynamoDB stand-ins
#   make soak   bursts of uploads under injected faults, random seeds (docs/faults.md; ARGS="--seed N --files 2000 --rounds 3")
#   make coldstart  each function's cold start against a hello-world lambda_http binary
#   make bench  benchmarks into BENCHMARKS.md (speed targets are checked here, never by timed tests)
#   make build  one deployable zip per Lambda function (cargo-lambda; ARCH=arm64|x86_64)
#   make functions  the Lambda functions, one folder each under crates/functions/
#   make deploy sam deploy (guided the first time)
#   make release  versioned tfreg archives for Linux and macOS, x86_64 and arm64, with SHA-256 sums
#   make release-lambda  the Lambda zips of ARCH as one release asset (builds them first)
#   make deploy-release  deploy downloaded release zips (RELEASE_DIR=...): checked, no Rust needed
#   make fuzz   run one fuzz target (TARGET=<name> [SECONDS=600]; nightly + cargo-fuzz, not in `make test`)
#   make fuzz-list  the fuzz targets

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

# Lambda builds: architecture, and the functions: one folder each under crates/functions/
# (tfreg_lambda::Function::ALL; crates/lambda/tests/template_env.rs checks they agree)
ARCH ?= arm64
FUNCTIONS := $(notdir $(wildcard crates/functions/*))
LAMBDA_DIR := build/lambda
export SAM_CLI_TELEMETRY = 0

# Fuzzing (fuzz/README.md): one target for SECONDS; nightly builds with sanitizers, kept apart
# from the stable builds. FUZZ_ARGS passes more libFuzzer flags.
TARGET ?=
SECONDS ?= 600
FUZZ_TARGET_DIR ?= $(CARGO_TARGET_DIR)/fuzz
FUZZ_ARGS ?=

.PHONY: gate deep test-deep nextest podman one-host-tools functions version release release-check release-lambda check-lambda-release deploy-release sam-venv lint-workflows install check-local-build run token test lint bench bench-tools stack soak coldstart browser build-all check-lambda-zips lint-template fmt build build-cli deploy check-tools venv build-venv fuzz fuzz-list check-fuzz-tools

# The local shape's tfreg: no AWS SDK to compile (AWS=1 builds the AWS shape's commands in).
AWS ?=
CLI_FEATURES := $(if $(AWS),,--no-default-features --features fsevent)

## Serve the registry from $(DATA) on https://$(LISTEN)
run:
	$(CARGO) run --locked -p tfreg-cli $(CLI_FEATURES) --bin tfreg -- serve --data $(DATA) --listen $(LISTEN) $(ARGS)

## Create an access token for $(DATA) (ARGS="--namespace acme --expires 90d" to restrict it)
token:
	@$(CARGO) run --quiet --locked -p tfreg-cli $(CLI_FEATURES) --bin tfreg -- token create --data $(DATA) $(ARGS)

## Install `tfreg` into ~/.cargo/bin (AWS=1: with --table, --bucket and reindex)
install:
	$(CARGO) install --locked --path crates/cli $(CLI_FEATURES)
	@bin="$${CARGO_INSTALL_ROOT:-$${CARGO_HOME:-$$HOME/.cargo}}/bin"; \
	case ":$$PATH:" in *":$$bin:"*) ;; *) echo "tfreg is installed in $$bin, which is not on your PATH: add it (export PATH=\"$$bin:\$$PATH\")" ;; esac

## The local shape's build compiles no AWS SDK crate (what `make run` builds)
check-local-build:
	@if $(CARGO) tree --locked -p tfreg-cli $(CLI_FEATURES) -e normal --prefix none | grep -E '^aws-'; then \
	  echo "the local build (make run) depends on the AWS crates above: keep them behind tfreg-cli's aws feature"; exit 1; \
	fi
	@echo "the local build (make run) compiles no AWS SDK crate"
	@if $(CARGO) tree --locked -p tfreg-core -e normal --prefix none | grep -E '^(aws-[a-z0-9_-]+|axum|hyper|reqwest|lambda_[a-z_]+|tfreg-(http|local|aws|lambda|cli|upstream)) '; then \
	  echo "tfreg-core depends on the crates above: the core holds no HTTP, no AWS and no other tfreg crate (ARCHITECTURE.md)"; exit 1; \
	fi
	@if $(CARGO) tree --locked -p tfreg-http -e normal --prefix none | grep -E '^(aws-[a-z0-9_-]+|lambda_[a-z_]+|tfreg-(aws|local|lambda|cli)) '; then \
	  echo "tfreg-http depends on the crates above: the routers take the storage ports, never an adapter (ARCHITECTURE.md)"; exit 1; \
	fi
	@if $(CARGO) tree --locked -p tfreg-upstream -e normal --prefix none | grep -E '^(aws-[a-z0-9_-]+|lambda_[a-z_]+|tfreg-(http|aws|local|lambda|cli)) '; then \
	  echo "tfreg-upstream depends on the crates above: the upstream client needs only the core (ARCHITECTURE.md)"; exit 1; \
	fi
	@echo "tfreg-core depends on no HTTP or AWS crate; tfreg-http on no adapter; tfreg-upstream only on the core"

## The gate: what CI runs (.ci/run) and what every change must pass. Formatting, lints, the
## template and workflow checks, then every test of every crate (cargo-nextest: one process a
## test, two at a time) except the deep tier's, which carry `#[ignore = "deep tier: ..."]`.
## Prints its total time and its ten slowest tests at the end, passed or not
## (docs/development.md#the-two-tiers).
test:
	@start=$$(date +%s); status=0; \
	$(MAKE) --no-print-directory gate || status=$$?; \
	$(PYTHON) tests/tools/test_report.py --tier gate --start $$start --status $$status \
	  --junit $(NEXTEST_JUNIT)/default/junit.xml; \
	exit $$status

gate: check-tools venv lint lint-template lint-workflows
	$(CARGO) build --locked --workspace --bins
	$(CARGO) nextest run --locked --workspace --no-fail-fast
	$(CARGO) test --locked --workspace --doc

## The deep tier, at full size: the tests marked `#[ignore = "deep tier: ..."]` (the 500-file
## soak, request costs at 10,000 versions, bulk publishing of thousands, the README with its
## optimised install, the release archive and the container image), and the arm64 Lambda
## zips with their size limit and the release dry run. Run it before calling done a change
## to the AWS adapters, the indexer, retries, packaging or releases.
test-deep:
	@start=$$(date +%s); status=0; \
	$(MAKE) --no-print-directory deep || status=$$?; \
	$(PYTHON) tests/tools/test_report.py --tier deep --start $$start --status $$status \
	  --junit $(NEXTEST_JUNIT)/deep/junit.xml; \
	exit $$status

# The zips build beside the tests at the lowest CPU priority: the deep tier's tests wait on
# the emulator (one Python process) most of the time, and the zips take the other core. A
# failed zip check fails the tier at the end, with its log. (cargo-lambda builds for its own
# target, so neither build waits on the other's lock.)
deep: check-tools podman venv build-venv
	@mkdir -p $(LAMBDA_DIR); log=$(LAMBDA_DIR)/check.log; \
	echo "building and checking the arm64 Lambda zips beside the tests, at low priority (log: $$log)"; \
	setsid nice -n 19 $(MAKE) --no-print-directory check-lambda-zips check-lambda-release >$$log 2>&1 & zips=$$!; \
	trap 'kill -- -$$zips 2>/dev/null || true' EXIT; \
	status=0; \
	$(CARGO) build --locked --workspace --bins || status=$$?; \
	if [ $$status = 0 ]; then \
	  $(CARGO) nextest run --locked --workspace --no-fail-fast --profile deep --run-ignored only || status=$$?; \
	fi; \
	echo "waiting for the Lambda zips (log: $$log)"; \
	if wait $$zips; then cat $$log; else cat $$log; echo "the Lambda zips' check failed (above)"; status=1; fi; \
	exit $$status

# Where cargo-nextest writes each profile's JUnit report (.config/nextest.toml): its store,
# target/nextest in the clone, whatever CARGO_TARGET_DIR says.
NEXTEST_JUNIT = $(CURDIR)/target/nextest

## The test virtualenv; reinstalled when tests/requirements.txt changes
venv: $(VENV)/.installed
$(VENV)/.installed: tests/requirements.txt
	@command -v $(PYTHON) >/dev/null || { echo "$(PYTHON) is missing: install Python 3.9+ (apt-get install python3 python3-venv)"; exit 1; }
	$(PYTHON) -m venv $(VENV)
	$(VENV)/bin/pip install --quiet --disable-pip-version-check -r tests/requirements.txt
	touch $@

## The deployed stack on this machine (ARGS=--redirect for redirect mode)
stack: venv
	$(CARGO) build --locked --workspace --bins
	$(CARGO_TARGET_DIR)/debug/tfreg-stack $(ARGS)

## The soak (docs/faults.md): rounds of a burst under faults on the stack, each with its seed
## printed; exits non-zero on any wrong answer or loss. ARGS="--seed N --files 2000 --rounds 3"
soak: venv
	$(CARGO) build --locked --workspace --bins
	$(CARGO_TARGET_DIR)/debug/tfreg-soak $(ARGS)

## Benchmarks, written to BENCHMARKS.md (tests/src/bin/tfreg-bench/): the API against nginx,
## pages, scale, restarts, hashing, cold starts; then token checks per second. Installs wrk and
## nginx from Debian when it can. ARGS=--quick for short runs.
bench: bench-tools venv
	$(CARGO) build --locked --release --workspace --bins
	$(CARGO_TARGET_DIR)/release/tfreg-bench $(ARGS)
	$(CARGO) bench --locked -p tfreg-local --bench tokens
	$(CARGO) bench --locked -p tfreg-core --bench search

bench-tools:
	@if command -v wrk >/dev/null && command -v nginx >/dev/null && command -v unzip >/dev/null; then exit 0; fi; \
	if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
	  echo "installing wrk, nginx and unzip for the benchmarks (apt-get install wrk nginx-light unzip)"; \
	  apt-get install -y --no-install-recommends wrk nginx-light unzip \
	    || { apt-get update && apt-get install -y --no-install-recommends wrk nginx-light unzip; }; \
	else \
	  echo "wrk, nginx or unzip is missing: sudo apt-get install wrk nginx-light unzip"; exit 1; \
	fi

## Each function's cold start against a hello-world lambda_http binary (release builds)
coldstart:
	$(CARGO) build --locked --release --workspace --bins
	$(CARGO_TARGET_DIR)/release/tfreg-coldstart

## Formatting and lints (the local-only tfreg too)
lint: check-local-build
	$(CARGO) fmt --all -- --check
	$(CARGO) clippy --locked --workspace --all-targets -- -D warnings
	$(CARGO) clippy --locked -p tfreg-cli --no-default-features --all-targets -- -D warnings

## The SAM template: cfn-lint, SAM's own validation, no dependency cycles, its permissions
## and limits (tests/tools/template_policy.py); all offline
lint-template: venv
	$(VENV)/bin/cfn-lint template.yaml
	$(VENV)/bin/sam validate --lint --region us-east-1 --template-file template.yaml
	$(VENV)/bin/python tests/tools/template_cycles.py template.yaml
	$(VENV)/bin/python tests/tools/template_policy.py template.yaml

## The GitHub Actions workflows: actionlint, with shellcheck on their run: scripts (both from
## PyPI, in .venv, so the result is the same on every machine); then the release workflow's
## policy: its signing job installs nothing and cannot write, and only its publishing job can
## (tests/tools/workflow_policy.py)
lint-workflows: venv
	$(VENV)/bin/actionlint -no-color -shellcheck=$(abspath $(VENV))/bin/shellcheck -pyflakes= .github/workflows/*.yml
	$(VENV)/bin/python tests/tools/workflow_policy.py .github/workflows/release.yml

## Format the code
fmt:
	$(CARGO) fmt --all

## Build the tfreg binary (release)
build-cli:
	$(CARGO) build --locked --release -p tfreg-cli --bin tfreg
	@echo "built $(CARGO_TARGET_DIR)/release/tfreg"

## Tools for building and deploying the Lambda functions
build-venv: $(VENV)/.build-installed
$(VENV)/.build-installed: tools/build-requirements.txt
	@command -v $(PYTHON) >/dev/null || { echo "$(PYTHON) is missing: install Python 3.9+"; exit 1; }
	$(PYTHON) -m venv $(VENV)
	$(VENV)/bin/pip install --quiet --disable-pip-version-check -r tools/build-requirements.txt
	touch $@

## One zip per Lambda function in build/lambda/<function>/bootstrap.zip (ARCH=arm64, the
## default, or x86_64); installs what it needs: the Rust target (rustup), cargo-lambda and zig
## (into .venv, from PyPI)
build: build-venv
	@case "$(ARCH)" in arm64) target=aarch64-unknown-linux-gnu ;; x86_64) target=x86_64-unknown-linux-gnu ;; \
	  *) echo "ARCH must be arm64 or x86_64"; exit 1 ;; esac; \
	command -v rustup >/dev/null || { echo "rustup is missing: install Rust from https://rustup.rs"; exit 1; }; \
	rustup target list --installed | grep -qx $$target || rustup target add $$target
	@case "$(ARCH)" in arm64) flag=--arm64 ;; x86_64) flag=--x86-64 ;; esac; \
	PATH="$(abspath $(VENV))/bin:$$PATH" $(CARGO) lambda build --locked --release $$flag --output-format zip \
	  --lambda-dir $(LAMBDA_DIR) $(addprefix --bin ,$(FUNCTIONS))
	@ls -l $(foreach f,$(FUNCTIONS),$(LAMBDA_DIR)/$(f)/bootstrap.zip)

# Release archives: tfreg with AWS support, cross-compiled with cargo-zigbuild.
VERSION ?= $(shell sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -n 1)
RELEASE_DIR ?= build/release
RELEASE_TARGETS ?= x86_64-unknown-linux-gnu aarch64-unknown-linux-gnu x86_64-apple-darwin aarch64-apple-darwin

## tfreg-$(VERSION)-<target>.tar.gz for each of RELEASE_TARGETS, and tfreg-$(VERSION)-SHA256SUMS
release: build-venv
	PATH="$(abspath $(VENV))/bin:$$PATH" tools/release.sh $(VERSION) $(RELEASE_DIR) $(RELEASE_TARGETS)

## Installs this machine's archive as the README says, in a scratch folder, and runs it
release-check:
	tools/check-release.sh $(VERSION) $(RELEASE_DIR) $$(rustc -vV | sed -n 's/^host: //p')

## The version in Cargo.toml (what a release tag must say: v$(VERSION))
version:
	@echo $(VERSION)

## tfreg-lambda-$(VERSION)-$(ARCH).zip in $(RELEASE_DIR): template.yaml and every function's
## build/lambda/<fn>/bootstrap.zip, built first; SHA256SUMS rewritten over all assets there
## (signed when SIGN_KEY names a gpg key)
release-lambda: build
	tools/release-lambda.sh $(VERSION) $(ARCH) $(RELEASE_DIR) $(FUNCTIONS)

## The arm64 zips `make test` built, as release assets deployed in a dry run (signature, sums,
## layout, sam validate; deploying from a release never calls cargo); no AWS, about 10 s
check-lambda-release: check-lambda-zips venv
	SAM=$(abspath $(VENV))/bin/sam tools/release-check-lambda.sh $(VERSION) arm64 $(FUNCTIONS)

## SAM CLI alone in .venv, at the version tools/build-requirements.txt pins (what
## deploy-release needs: no Rust, no zig)
sam-venv: $(VENV)/.sam-installed
$(VENV)/.sam-installed: tools/build-requirements.txt
	@command -v $(PYTHON) >/dev/null || { echo "$(PYTHON) is missing: install Python 3.9+"; exit 1; }
	$(PYTHON) -m venv $(VENV)
	$(VENV)/bin/pip install --quiet --disable-pip-version-check "$$(grep -x 'aws-sam-cli==[0-9.]*' tools/build-requirements.txt)"
	touch $@

## Deploy a downloaded release (VERSION, ARCH; its assets in RELEASE_DIR): checks that the sums
## are signed by the release key (tools/release-key.fingerprint, or RELEASE_KEY=FINGERPRINT)
## and the sums, lays the zips out in build/lambda, then sam deploy as `make deploy` does;
## compiles nothing. DRY_RUN=1 stops before AWS. INSECURE_SKIP_SIGNATURE=1 checks no
## signature (the sums alone), with a warning: for assets you built without a signing key.
DRY_RUN ?=
RELEASE_KEY ?=
INSECURE_SKIP_SIGNATURE ?=
deploy-release: sam-venv
	SAM=$(abspath $(VENV))/bin/sam tools/deploy-release.sh $(if $(DRY_RUN),--dry-run) \
	  $(if $(RELEASE_KEY),--release-key "$(RELEASE_KEY)") $(if $(INSECURE_SKIP_SIGNATURE),--insecure-skip-signature) \
	  --version $(VERSION) --arch $(ARCH) $(RELEASE_DIR)

## Both architectures, one after the other (build/lambda holds the last)
build-all:
	$(MAKE) build ARCH=x86_64
	$(MAKE) build ARCH=arm64

## The deployable zips build (arm64) and each stays under 8 MB
check-lambda-zips: build
	@for f in $(FUNCTIONS); do \
	  size=$$(stat -c %s $(LAMBDA_DIR)/$$f/bootstrap.zip); \
	  if [ $$size -ge 8388608 ]; then echo "$$f: bootstrap.zip is $$size bytes, over 8 MB"; exit 1; fi; \
	  echo "$$f: bootstrap.zip $$size bytes (under 8 MB)"; \
	done

## Deploy with SAM: guided the first time (answers saved in samconfig.toml), then exactly as
## samconfig.toml says (edit it to change parameters; nothing here overrides them)
deploy: build
	@if [ -f samconfig.toml ]; then \
	  $(VENV)/bin/sam deploy; \
	else \
	  $(VENV)/bin/sam deploy --guided --capabilities CAPABILITY_IAM --resolve-s3 --parameter-overrides Architecture=$(ARCH); \
	fi

## Run fuzz target $(TARGET) for $(SECONDS) seconds; a crash stops it and lands in fuzz/artifacts/
fuzz: check-fuzz-tools
	@[ -n "$(TARGET)" ] || { echo "TARGET is missing: make fuzz TARGET=<name> [SECONDS=600] (make fuzz-list names them)"; exit 1; }
	cd fuzz && CARGO_TARGET_DIR=$(FUZZ_TARGET_DIR) cargo +nightly fuzz run $(TARGET) -- \
	  -max_total_time=$(SECONDS) -rss_limit_mb=2048 -timeout=10 $(FUZZ_ARGS)

## The fuzz targets
fuzz-list: check-fuzz-tools
	@cd fuzz && cargo +nightly fuzz list

check-fuzz-tools:
	@cargo +nightly --version >/dev/null 2>&1 || { echo "the nightly toolchain is missing: rustup toolchain install nightly"; exit 1; }
	@cargo fuzz --version >/dev/null 2>&1 || { echo "cargo-fuzz is missing: cargo install cargo-fuzz --locked"; exit 1; }

## The Lambda functions, one a line (what FUNCTIONS holds)
functions:
	@printf '%s\n' $(FUNCTIONS)

## Tools the tests need, with how to get them
check-tools:
	@command -v $(CARGO) >/dev/null || { echo "cargo is missing: install Rust from https://rustup.rs"; exit 1; }
	@command -v terraform >/dev/null || { echo "terraform is missing: the end-to-end tests drive the real CLI. Install Terraform 1.5+ (https://developer.hashicorp.com/terraform/install)"; exit 1; }
	@command -v gpg >/dev/null || { echo "gpg is missing: the provider tests sign releases with it. Install GnuPG (apt-get install gnupg)"; exit 1; }
	@$(CARGO) fmt --version >/dev/null 2>&1 || { echo "rustfmt is missing: rustup component add rustfmt"; exit 1; }
	@$(CARGO) clippy --version >/dev/null 2>&1 || { echo "clippy is missing: rustup component add clippy"; exit 1; }
	@$(MAKE) --no-print-directory browser
	@$(MAKE) --no-print-directory one-host-tools
	@$(MAKE) --no-print-directory nextest

## cargo-nextest, which runs the tests (one process a test, with per-test times and time
## limits): installed with cargo when missing (.config/nextest.toml names the oldest it takes)
nextest:
	@if $(CARGO) nextest --version >/dev/null 2>&1; then exit 0; fi; \
	echo "installing cargo-nextest, which runs the tests (cargo install --locked cargo-nextest)"; \
	$(CARGO) install --locked cargo-nextest

## nginx, Caddy, systemd-analyze and shellcheck, with which the one-host tests check the
## systemd unit, the proxy examples and the backup script: installed here when this runs as
## root with apt-get (as on CI), else the command to install them is printed
one-host-tools:
	@if command -v nginx >/dev/null && command -v caddy >/dev/null && command -v systemd-analyze >/dev/null && command -v shellcheck >/dev/null; then exit 0; fi; \
	if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
	  echo "installing nginx, caddy, systemd and shellcheck for the one-host tests (apt-get install nginx-light caddy systemd shellcheck)"; \
	  apt-get install -y --no-install-recommends nginx-light caddy systemd shellcheck \
	    || { apt-get update && apt-get install -y --no-install-recommends nginx-light caddy systemd shellcheck; }; \
	else \
	  echo "the one-host tests need nginx, caddy, systemd-analyze and shellcheck: sudo apt-get install nginx-light caddy systemd shellcheck"; \
	  exit 1; \
	fi

## podman and runc, with which the container image's test builds and runs the image: installed
## here when this runs as root with apt-get (as on CI), else the command to install them is printed
podman:
	@if command -v podman >/dev/null && command -v runc >/dev/null; then exit 0; fi; \
	if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
	  echo "installing podman and runc for the container image's test (apt-get install podman runc)"; \
	  apt-get install -y podman runc || { apt-get update && apt-get install -y podman runc; }; \
	else \
	  echo "podman is missing: the container image's test builds and runs the image. Install it: sudo apt-get install podman runc"; \
	  exit 1; \
	fi

## Debian's Chromium and ChromeDriver, which the web pages' tests drive: installed here when
## this runs as root with apt-get (as on CI), else the command to install them is printed
browser:
	@if [ -x /usr/bin/chromium ] && [ -x /usr/bin/chromedriver ]; then exit 0; fi; \
	if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
	  echo "installing Chromium and ChromeDriver for the web pages' tests (apt-get install chromium chromium-driver)"; \
	  apt-get install -y --no-install-recommends chromium chromium-driver \
	    || { apt-get update && apt-get install -y --no-install-recommends chromium chromium-driver; }; \
	else \
	  echo "chromium and chromedriver are missing: the web pages' tests drive a real browser. Install them: sudo apt-get install chromium chromium-driver"; \
	  exit 1; \
	fi
