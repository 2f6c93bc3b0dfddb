# sessionfs: make run mounts the default store at ~/agent-sessions; make test runs every test.
GO        ?= go
BIN       := bin/sessionfs
VERSION   ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS   := -X main.version=$(VERSION)
# The real Claude Code CLIs the e2e tests drive, pinned: an old one with the stricter resume behaviour, and the
# newest the registry served when last checked (README, "Claude Code versions").
CLAUDE_VERSION     ?= 2.1.197
CLAUDE_NEW_VERSION ?= 2.1.332
CLAUDE_BIN         := $(CURDIR)/e2e/.cache/claude-$(CLAUDE_VERSION)/node_modules/.bin/claude
CLAUDE_NEW_BIN     := $(CURDIR)/e2e/.cache/claude-$(CLAUDE_NEW_VERSION)/node_modules/.bin/claude
# The other agents' real CLIs (README, "Other agents"), pinned to the newest the registry served when last checked.
CODEX_VERSION  ?= 0.169.0
GEMINI_VERSION ?= 0.61.0
QWEN_VERSION   ?= 0.24.4
OPENCODE_VERSION ?= 1.18.33
CODEX_BIN      := $(CURDIR)/e2e/.cache/codex-$(CODEX_VERSION)/node_modules/.bin/codex
GEMINI_BIN     := $(CURDIR)/e2e/.cache/gemini-$(GEMINI_VERSION)/node_modules/.bin/gemini
QWEN_BIN       := $(CURDIR)/e2e/.cache/qwen-$(QWEN_VERSION)/node_modules/.bin/qwen
OPENCODE_BIN   := $(CURDIR)/e2e/.cache/opencode-$(OPENCODE_VERSION)/node_modules/.bin/opencode
# An execution count, not a duration: a duration races Go's fuzz coordinator at its deadline (golang/go#75804)
# and fails a run that found nothing.
FUZZTIME  ?= 200000x
# Each import makes a store on disk: fewer runs in the same time.
FUZZTIME_IMPORT ?= 5000x

.PHONY: build run test unit e2e fuzz bench fmt vet claude agents agents-check clean

build:
	CGO_ENABLED=0 $(GO) build -ldflags "$(LDFLAGS)" -o $(BIN) ./cmd/sessionfs

run: build
	$(BIN) mount

# Every stage runs even when one before it fails (a unit failure must not hide the fuzz and e2e results); the
# failed ones are named at the end and make fails.
TEST_STAGES := vet unit fuzz e2e
test:
	@failed=""; for s in $(TEST_STAGES); do \
		echo "=== make $$s"; $(MAKE) --no-print-directory $$s || failed="$$failed $$s"; \
	done; \
	if [ -n "$$failed" ]; then echo "make test: failed stages:$$failed"; exit 1; fi; echo "make test: every stage passed ($(TEST_STAGES))"

unit:
	$(GO) test -race -count=1 ./layout/... ./agents/... ./mount/... ./backends/... ./cmd/... ./travel/... ./confine/... ./bind/... ./csi/... ./session/...

# Skipped tests (a missing requirement outside CI) are listed at the end, with why.
e2e: build claude agents
	@mkdir -p e2e/.cache; rm -f e2e/.cache/skips.txt
	SESSIONFS_BIN=$(CURDIR)/$(BIN) SESSIONFS_CLAUDE=$(CLAUDE_BIN) SESSIONFS_CLAUDE_NEW=$(CLAUDE_NEW_BIN) SESSIONFS_SKIPS=$(CURDIR)/e2e/.cache/skips.txt \
		SESSIONFS_CODEX=$(CODEX_BIN) SESSIONFS_GEMINI=$(GEMINI_BIN) SESSIONFS_QWEN=$(QWEN_BIN) SESSIONFS_OPENCODE=$(OPENCODE_BIN) \
		$(GO) test -race -count=1 -timeout 30m ./e2e/...; status=$$?; \
		if [ -s e2e/.cache/skips.txt ]; then echo "skipped e2e tests:"; cat e2e/.cache/skips.txt; fi; exit $$status

# Short fuzz runs of the targets over hostile input: ids, container paths, the sanitizer, transcripts, archives.
# Each target runs even when one before it fails; the failed ones are named.
FUZZ_TARGETS := layout:FuzzValidateID:$(FUZZTIME) layout:FuzzContainerMapping:$(FUZZTIME) agents/claude:FuzzSanitize:$(FUZZTIME) \
	agents/claude:FuzzScanEntries:$(FUZZTIME) travel:FuzzImport:$(FUZZTIME_IMPORT)
fuzz:
	@failed=""; for t in $(FUZZ_TARGETS); do \
		pkg=$${t%%:*}; rest=$${t#*:}; name=$${rest%%:*}; n=$${rest#*:}; \
		echo "$(GO) test ./$$pkg/ -run '^$$' -fuzz '^$$name$$' -fuzztime $$n"; \
		$(GO) test ./$$pkg/ -run '^$$' -fuzz "^$$name\$$" -fuzztime $$n || failed="$$failed $$name"; \
	done; [ -z "$$failed" ] || { echo "fuzz: failed:$$failed"; exit 1; }

claude: $(CLAUDE_BIN) $(CLAUDE_NEW_BIN)

$(CURDIR)/e2e/.cache/claude-%/node_modules/.bin/claude:
	mkdir -p $(CURDIR)/e2e/.cache/claude-$*
	npm install --prefix $(CURDIR)/e2e/.cache/claude-$* --no-audit --no-fund @anthropic-ai/claude-code@$*

agents: $(CODEX_BIN) $(GEMINI_BIN) $(QWEN_BIN) $(OPENCODE_BIN)

# Which of the pins above the registry has moved past (asks npm; no test depends on it).
agents-check:
	@scripts/agents-check claude=@anthropic-ai/claude-code@$(CLAUDE_NEW_VERSION) codex=@openai/codex@$(CODEX_VERSION) \
		gemini=@google/gemini-cli@$(GEMINI_VERSION) qwen=@qwen-code/qwen-code@$(QWEN_VERSION) \
		opencode=opencode-ai@$(OPENCODE_VERSION)

$(CODEX_BIN):
	mkdir -p $(CURDIR)/e2e/.cache/codex-$(CODEX_VERSION)
	npm install --prefix $(CURDIR)/e2e/.cache/codex-$(CODEX_VERSION) --no-audit --no-fund @openai/codex@$(CODEX_VERSION)
$(GEMINI_BIN):
	mkdir -p $(CURDIR)/e2e/.cache/gemini-$(GEMINI_VERSION)
	npm install --prefix $(CURDIR)/e2e/.cache/gemini-$(GEMINI_VERSION) --no-audit --no-fund @google/gemini-cli@$(GEMINI_VERSION)
$(QWEN_BIN):
	mkdir -p $(CURDIR)/e2e/.cache/qwen-$(QWEN_VERSION)
	npm install --prefix $(CURDIR)/e2e/.cache/qwen-$(QWEN_VERSION) --no-audit --no-fund @qwen-code/qwen-code@$(QWEN_VERSION)
# opencode is one compiled binary (npm's opencode-ai installs the one of this platform as bin/opencode.exe).
$(OPENCODE_BIN):
	mkdir -p $(CURDIR)/e2e/.cache/opencode-$(OPENCODE_VERSION)
	npm install --prefix $(CURDIR)/e2e/.cache/opencode-$(OPENCODE_VERSION) --no-audit --no-fund opencode-ai@$(OPENCODE_VERSION)

fmt:
	gofmt -w $$(git ls-files '*.go')

vet:
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || { echo "gofmt needed:"; gofmt -l $$(git ls-files '*.go'); exit 1; }
	$(GO) vet ./...

clean:
	rm -rf bin e2e/.cache

# The benchmark: native vs sessionfs vs bindfs, in one run (BENCH_FLAGS=-size=256MiB... to shrink it).
BENCH_FLAGS ?=
bench: build
	$(GO) run ./cmd/sessionfs-bench -sessionfs $(BIN) $(BENCH_FLAGS)
