# toolgate's build. Tools are pinned: protoc plugins through go.mod tool
# directives (go tool), buf by version below; bin/ holds what is installed.
SHELL := bash
.SHELLFLAGS := -euo pipefail -c
.DEFAULT_GOAL := help
MAKEFLAGS += --no-builtin-rules --warn-undefined-variables

BIN         := $(CURDIR)/bin
BUF_VERSION := v1.75.0
BUF         := $(BIN)/buf-$(BUF_VERSION)
# ghz v0.93.0 drives about twice the load of later versions on these machines.
GHZ_VERSION := v0.93.0
GHZ         := $(BIN)/ghz-$(GHZ_VERSION)
GO_PKGS     := ./...
FUZZTIME    ?= 30s
SOAK_DURATION ?= 10m

.PHONY: help
help: ## List the targets
	@awk 'BEGIN {FS = ":.*## "} /^[a-zA-Z0-9_.-]+:.*## / {printf "  %-16s %s\n", $$1, $$2}' $(MAKEFILE_LIST)

.PHONY: run
run: ## Run the server on 127.0.0.1:50051 with the embedded default policy
	go run ./cmd/toolgate serve

# toolgate-hook starts for every tool call an agent makes. Built with cgo,
# its use of net links libc's resolver and the process starts through the
# dynamic loader, which cost about 1 ms per start here, more than the rest
# of its start-up: it is built static, with Go's own resolver.
HOOK_ENV := CGO_ENABLED=0

.PHONY: build
build: ## Build bin/toolgate and, beside it, bin/toolgate-hook (the lean hook binary, static)
	go build -o $(BIN)/toolgate ./cmd/toolgate
	$(HOOK_ENV) go build -o $(BIN)/toolgate-hook ./cmd/toolgate-hook

.PHONY: install
install: ## Install toolgate and toolgate-hook (static) into GOBIN (go env GOBIN, else GOPATH/bin)
	go install ./cmd/toolgate
	$(HOOK_ENV) go install ./cmd/toolgate-hook

# The container image, built from the Dockerfile with docker or podman
# (CONTAINER_TOOL; the first found on PATH). Its build context leaves out
# .git, so the version and revision are passed in as build arguments.
IMAGE          ?= toolgate:$(IMAGE_VERSION)
IMAGE_VERSION  ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
IMAGE_REVISION ?= $(shell git rev-parse HEAD 2>/dev/null)
CONTAINER_TOOL ?= $(shell command -v docker 2>/dev/null || command -v podman 2>/dev/null || echo docker)

.PHONY: image
image: ## Build the container image IMAGE (default toolgate:VERSION) with docker or podman (CONTAINER_TOOL)
	$(CONTAINER_TOOL) build -f Dockerfile -t $(IMAGE) --build-arg VERSION=$(IMAGE_VERSION) --build-arg REVISION=$(IMAGE_REVISION) .

# make test runs the unit and in-process tests; the tests that build the
# binary and drive real processes (resilience/, deploy/, the documentation's hook
# snippets, the agents' CLIs) are make test-e2e.
UNIT_PKGS = $(shell go list $(GO_PKGS) | grep -v -e '/resilience$$' -e '/deploy$$' -e '/e2e/')

.PHONY: test
test: lint gen-check postgres ## Lint, check gen/ is fresh, run the unit and in-process tests with -race (PostgreSQL's included)
	TOOLGATE_PG_BIN=$(PG_BIN) TOOLGATE_POSTGRES_REQUIRED=1 go test -race -count=1 $(UNIT_PKGS)

# The approvals store's tests run against a real PostgreSQL 15, a
# throwaway cluster they start and stop (approvals/store/pgtest). It comes
# from Debian's postgresql package, installed when missing (as root, or
# through sudo); the package's own cluster is not used.
PG_BIN := /usr/lib/postgresql/15/bin

.PHONY: postgres
postgres: $(PG_BIN)/pg_ctl ## Install PostgreSQL 15 (Debian's postgresql package) for the store tests, when missing

$(PG_BIN)/pg_ctl:
	@set -e; sudo=(); \
	if ((EUID != 0)); then \
	  if ! command -v sudo >/dev/null; then echo "postgresql: need root or sudo to install Debian's postgresql package" >&2; exit 1; fi; \
	  sudo=(sudo); \
	fi; \
	tmp="$$(mktemp -d)"; trap 'rm -rf "$$tmp"' EXIT; \
	echo "postgresql: installing Debian's postgresql package"; \
	if ! { "$${sudo[@]}" apt-get update -qq && "$${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql; } >"$$tmp/log" 2>&1; then \
	  cat "$$tmp/log" >&2; exit 1; \
	fi; \
	test -x $@ || { echo "postgresql: $@ is missing after the install (not PostgreSQL 15?)" >&2; exit 1; }

.PHONY: test-e2e
test-e2e: e2e-agents monitoring-test postgres chromium ## The real agent CLIs through the hooks, the alert rules (promtool), then the binary: resilience/ (faults, load, approvals over both stores and in a browser), deploy/, the documentation's hook snippets and quickstart, with -race
	PATH="$(dir $(PROMTOOL)):$$PATH" TOOLGATE_PG_BIN=$(PG_BIN) TOOLGATE_POSTGRES_REQUIRED=1 TOOLGATE_CHROMIUM_REQUIRED=1 \
	  go test -race -count=1 ./resilience/... ./deploy/...
	TOOLGATE_E2E=1 go test -race -count=1 -run 'TestHookReadmeSnippets|TestQuickstart' ./cmd/toolgate

# The approvals page's end-to-end test drives a headless Chromium: Debian's
# chromium package, installed when missing (as root, or through sudo).
# Nothing downloads a browser of its own.
CHROMIUM := /usr/bin/chromium

.PHONY: chromium
chromium: $(CHROMIUM) ## Install Chromium (Debian's chromium package) for the approvals page's browser tests, when missing

$(CHROMIUM):
	@set -e; sudo=(); \
	if ((EUID != 0)); then \
	  if ! command -v sudo >/dev/null; then echo "chromium: need root or sudo to install Debian's chromium package" >&2; exit 1; fi; \
	  sudo=(sudo); \
	fi; \
	tmp="$$(mktemp -d)"; trap 'rm -rf "$$tmp"' EXIT; \
	echo "chromium: installing Debian's chromium package"; \
	if ! { "$${sudo[@]}" apt-get update -qq && "$${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium; } >"$$tmp/log" 2>&1; then \
	  cat "$$tmp/log" >&2; exit 1; \
	fi; \
	test -x $@ || { echo "chromium: $@ is missing after the install" >&2; exit 1; }

# promtool comes from Debian's prometheus package, extracted into bin/
# rather than installed: installing would also set up (and, under an init
# system, start) a Prometheus server. A promtool on PATH is used as it is.
# Fetching the package needs fresh package lists: apt-get update as root,
# or through sudo.
PROMTOOL := $(shell command -v promtool 2>/dev/null || echo $(BIN)/promtool)

.PHONY: monitoring-test
monitoring-test: $(PROMTOOL) ## Check deploy/prometheus/alerts.yaml and run its unit tests with promtool
	$(PROMTOOL) check rules deploy/prometheus/alerts.yaml
	$(PROMTOOL) test rules deploy/prometheus/alerts_test.yaml

$(BIN)/promtool:
	@set -e; sudo=(); \
	if ((EUID != 0)); then \
	  if ! command -v sudo >/dev/null; then echo "promtool: need root or sudo to fetch Debian's prometheus package" >&2; exit 1; fi; \
	  sudo=(sudo); \
	fi; \
	tmp="$$(mktemp -d)"; trap 'rm -rf "$$tmp"' EXIT; \
	echo "promtool: extracting it from Debian's prometheus package"; \
	if ! { "$${sudo[@]}" apt-get update -qq && (cd "$$tmp" && apt-get download -qq prometheus); } >"$$tmp/log" 2>&1; then \
	  cat "$$tmp/log" >&2; exit 1; \
	fi; \
	dpkg-deb -x "$$tmp"/prometheus_*.deb "$$tmp/x"; \
	mkdir -p $(BIN); install -m 0755 "$$tmp/x/usr/bin/promtool" $@

# buf breaking compares proto/ in this tree with proto/ on main, as
# committed: on a branch it guards the branch's API against main's (no field
# renumbered, renamed or retyped, no JSON name changed); on main it checks
# edits not yet committed, and a clean checkout of main compares main with
# itself and passes. A clone with no local main (CI checking out a pull
# request) compares with origin/main, which it must fetch first. Set
# BUF_AGAINST to compare with another buf input ('.git#tag=v1.0.0').
BUF_AGAINST ?=

.PHONY: lint
lint: $(BUF) ## gofmt, go vet, staticcheck (pinned in go.mod), buf lint, buf breaking against main
	@files="$$( { git ls-files --cached --others --exclude-standard -- '*.go' 2>/dev/null || find . -name '*.go'; } \
	  | while IFS= read -r f; do if [[ -f "$$f" ]]; then printf '%s\n' "$$f"; fi; done | xargs -r gofmt -l)"; \
	  if [[ -n "$$files" ]]; then echo "gofmt needed:"; echo "$$files"; exit 1; fi
	go vet $(GO_PKGS)
	go tool staticcheck $(GO_PKGS)
	$(BUF) lint
	@against='$(BUF_AGAINST)'; \
	  if [[ -z "$$against" ]]; then \
	    if git show-ref --quiet --verify refs/heads/main; then against='.git#branch=main'; else against='.git#ref=origin/main'; fi; \
	  fi; \
	  echo "$(BUF) breaking --against '$$against'"; \
	  $(BUF) breaking --against "$$against"

.PHONY: generate
generate: $(BUF) ## Regenerate gen/ from proto/
	$(BUF) generate

.PHONY: gen-check
gen-check: $(BUF) ## Fail when gen/ differs from what proto/ generates
	@tmp="$$(mktemp -d)"; trap 'rm -rf "$$tmp"' EXIT; \
	  $(BUF) generate --output "$$tmp"; \
	  if ! diff -r "$$tmp/gen" gen; then echo "gen/ is stale: run make generate" >&2; exit 1; fi

.PHONY: fuzz
fuzz: ## Fuzz path containment, shell analysis and its nesting guard, the rule parser and path-rule filter, the tool input size, classifier answers and repeated JSON keys, FUZZTIME each (default 30s)
	go test -run '^$$' -fuzz '^FuzzCheck$$' -fuzztime $(FUZZTIME) ./engine/pathcheck/
	go test -run '^$$' -fuzz '^FuzzAnalyze$$' -fuzztime $(FUZZTIME) ./engine/shell/
	go test -run '^$$' -fuzz '^FuzzNesting$$' -fuzztime $(FUZZTIME) ./engine/shell/
	go test -run '^$$' -fuzz '^FuzzParse$$' -fuzztime $(FUZZTIME) ./engine/rules/
	go test -run '^$$' -fuzz '^FuzzStructSize$$' -fuzztime $(FUZZTIME) ./server/
	go test -run '^$$' -fuzz '^FuzzDecodeAnswer$$' -fuzztime $(FUZZTIME) ./classifier/
	go test -run '^$$' -fuzz '^FuzzHasNeeded$$' -fuzztime $(FUZZTIME) ./engine/rules/
	go test -run '^$$' -fuzz '^FuzzUnique$$' -fuzztime $(FUZZTIME) ./internal/jsonkeys/

.PHONY: bench
bench: $(GHZ) ## The hook's round trip against a minimal Go program, Go benchmarks, then ghz load on toolgate and a bare server; writes bench/results.md (about 4 minutes)
	go run ./bench/loadrun -ghz $(GHZ) -out bench/results.md

.PHONY: soak
soak: $(GHZ) ## Mixed load for SOAK_DURATION (default 10m); reports latency and memory drift in bench/soak.md
	go run ./bench/loadrun -ghz $(GHZ) -soak $(SOAK_DURATION) -out bench/soak.md

AGENTS     := claude-code gemini-cli codex
AGENTS_DIR := $(BIN)/agents

.PHONY: e2e-agents
e2e-agents: build ## Install the pinned Claude Code, Gemini CLI and Codex (e2e/agents/npm) and drive each, offline, through toolgate's hooks
	@for a in $(AGENTS); do \
	  dir=$(AGENTS_DIR)/$$a; lock=e2e/agents/npm/$$a/package-lock.json; \
	  if [[ -d $$dir/node_modules ]] && cmp -s $$lock $$dir/package-lock.json; then continue; fi; \
	  echo "npm ci $$a"; mkdir -p $$dir; cp e2e/agents/npm/$$a/package.json $$lock $$dir/; \
	  (cd $$dir && npm ci --no-audit --no-fund --loglevel=error); \
	done
	TOOLGATE_AGENTS_DIR=$(AGENTS_DIR) TOOLGATE_BIN=$(BIN)/toolgate go test -count=1 ./e2e/agents/...

.PHONY: clients-deps
clients-deps: ## Install the client examples' dependencies (apt packages if missing, npm ci)
	bash clients/deps.sh

.PHONY: clients-test
clients-test: build clients-deps ## Run the Python and Node client examples against a fresh server
	bash clients/test.sh $(BIN)/toolgate

$(GHZ):
	@mkdir -p $(BIN)/.ghz-install
	GOBIN=$(BIN)/.ghz-install go install github.com/bojand/ghz/cmd/ghz@$(GHZ_VERSION)
	mv $(BIN)/.ghz-install/ghz $@

$(BUF):
	@mkdir -p $(BIN)/.buf-install
	GOBIN=$(BIN)/.buf-install go install github.com/bufbuild/buf/cmd/buf@$(BUF_VERSION)
	mv $(BIN)/.buf-install/buf $@
