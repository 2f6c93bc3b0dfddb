# sessionfs: make run mounts the default store at ~/agent-sessions; make test runs every test.
GO        ?= go
BIN       := bin/sessionfs
# The whole CLI, which sessionfs runs for the commands that need a backend's SDK (cmd/sessionfs/backends.go).
BACKENDS  := bin/sessionfs-backends
# sessionfs version prints these: the latest tag's version (v0.x.y, -N-g<commit> past it; v0.0.0-dev+<commit>
# before the first tag), the commit, and its date (UTC; $SOURCE_DATE_EPOCH's when set): not the clock's, which
# made every build link anew (go's cache keys on the flags), a build with nothing changed takes a moment.
COMMIT    ?= $(shell git rev-parse HEAD 2>/dev/null || echo unknown)
VERSION   ?= $(shell git describe --tags --match 'v[0-9]*' --dirty 2>/dev/null || \
	echo "v0.0.0-dev+$$(git describe --always --abbrev=12 --dirty=.dirty --exclude='*' 2>/dev/null || echo unknown)")
DATE      ?= $(shell date -u -d "@$${SOURCE_DATE_EPOCH:-$$(git log -1 --format=%ct 2>/dev/null || date +%s)}" +%Y-%m-%dT%H:%M:%SZ)
LDFLAGS   := -X main.version=$(VERSION) -X main.commit=$(COMMIT) -X main.date=$(DATE)
# The real Claude Code CLIs the e2e tests drive, pinned: an old one with the stricter resume behaviour, and the
# newest the registry served when last checked (README, "Claude Code versions").
CLAUDE_VERSION     ?= 2.1.197
CLAUDE_NEW_VERSION ?= 2.1.332
CLAUDE_BIN         := $(CURDIR)/e2e/.cache/claude-$(CLAUDE_VERSION)/node_modules/.bin/claude
CLAUDE_NEW_BIN     := $(CURDIR)/e2e/.cache/claude-$(CLAUDE_NEW_VERSION)/node_modules/.bin/claude
# The other agents' real CLIs (README, "Other agents"), pinned to the newest the registry served when last checked.
CODEX_VERSION  ?= 0.171.0
GEMINI_VERSION ?= 0.61.0
QWEN_VERSION   ?= 0.24.4
OPENCODE_VERSION ?= 1.18.33
PI_VERSION     ?= 1.6.0
KIMI_VERSION   ?= 2.1.0
COPILOT_VERSION ?= 1.0.102
# pi 1.6.0 and Kimi Code 2.1.0 need Node 22.19 or later (node:module's enableCompileCache, node:zlib's zstd;
# Debian 12's Node 20 fails at once): npm's build of Node is installed beside each, and its node_modules/.bin,
# first on PATH, runs the CLI with it. Copilot's CLI is a binary with a Node of its own.
PI_NODE_VERSION ?= 22.23.5
PI_NODE_ARCH    := $(if $(filter aarch64 arm64,$(shell uname -m)),arm64,x64)
CODEX_BIN      := $(CURDIR)/e2e/.cache/codex-$(CODEX_VERSION)/node_modules/.bin/codex
GEMINI_BIN     := $(CURDIR)/e2e/.cache/gemini-$(GEMINI_VERSION)/node_modules/.bin/gemini
QWEN_BIN       := $(CURDIR)/e2e/.cache/qwen-$(QWEN_VERSION)/node_modules/.bin/qwen
OPENCODE_BIN   := $(CURDIR)/e2e/.cache/opencode-$(OPENCODE_VERSION)/node_modules/.bin/opencode
PI_BIN         := $(CURDIR)/e2e/.cache/pi-$(PI_VERSION)/node_modules/.bin/pi
KIMI_BIN       := $(CURDIR)/e2e/.cache/kimi-$(KIMI_VERSION)/node_modules/.bin/kimi
COPILOT_BIN    := $(CURDIR)/e2e/.cache/copilot-$(COPILOT_VERSION)/node_modules/.bin/copilot
# The devcontainers CLI the Docker volume tests drive (devcontainer up on a session's volume), pinned.
DEVCONTAINER_VERSION ?= 0.89.0
DEVCONTAINER_BIN     := $(CURDIR)/e2e/.cache/devcontainer-$(DEVCONTAINER_VERSION)/node_modules/.bin/devcontainer
# The S3-compatible server the sync tests run against (versitygw: a real S3 gateway over a folder, built from its
# pinned module; neither MinIO nor SeaweedFS is in Debian), installed beside the CLIs.
VERSITYGW_VERSION ?= v1.8.0
VERSITYGW_BIN     := $(CURDIR)/e2e/.cache/versitygw-$(VERSITYGW_VERSION)/versitygw
# An execution count, not a duration: a duration races Go's fuzz coordinator at its deadline (golang/go#75804)
# and fails a run that found nothing.
FUZZTIME  ?= 200000x
# Each import makes a store on disk: fewer runs in the same time.
FUZZTIME_IMPORT ?= 5000x

.PHONY: build run test unit e2e fuzz bench fmt vet claude agents agents-check agents-drift clean docs install uninstall install-test

build:
	CGO_ENABLED=0 $(GO) build -tags nobackends -ldflags "$(LDFLAGS)" -o $(BIN) ./cmd/sessionfs
	CGO_ENABLED=0 $(GO) build -ldflags "$(LDFLAGS)" -o $(BACKENDS) ./cmd/sessionfs

run: build
	$(BIN) mount

# The CLI reference (docs/cli, one page per command) and the man pages (man), generated from the commands' help;
# cmd/sessionfs's TestDocsUpToDate fails when they are stale.
docs: build
	$(BIN) __docs .

# make install puts the binary, bash, zsh and fish completion and the man pages under PREFIX: ~/.local for a user,
# /usr/local for root (PREFIX=/opt/sessionfs to choose; DESTDIR for packagers). make uninstall removes them.
PREFIX   ?= $(if $(filter 0,$(shell id -u)),/usr/local,$(HOME)/.local)
BINDIR   := $(DESTDIR)$(PREFIX)/bin
SHAREDIR := $(DESTDIR)$(PREFIX)/share
BASHCOMP := $(SHAREDIR)/bash-completion/completions/sessionfs
ZSHCOMP  := $(SHAREDIR)/zsh/site-functions/_sessionfs
FISHCOMP := $(SHAREDIR)/fish/vendor_completions.d/sessionfs.fish
MANDIR   := $(SHAREDIR)/man/man1
MANPAGES := $(notdir $(wildcard man/sessionfs*.1))
install: build
	install -d $(BINDIR) $(dir $(BASHCOMP)) $(dir $(ZSHCOMP)) $(dir $(FISHCOMP)) $(MANDIR)
	install -m 0755 $(BIN) $(BINDIR)/sessionfs
	install -m 0755 $(BACKENDS) $(BINDIR)/sessionfs-backends
	$(BIN) completion bash >$(BASHCOMP)
	$(BIN) completion zsh >$(ZSHCOMP)
	$(BIN) completion fish >$(FISHCOMP)
	install -m 0644 $(addprefix man/,$(MANPAGES)) $(MANDIR)
	@echo "installed sessionfs $(VERSION) in $(BINDIR)"
	@case ":$$PATH:" in *":$(PREFIX)/bin:"*) ;; *) echo "$(PREFIX)/bin is not on your PATH: add it (export PATH=\"$(PREFIX)/bin:\$$PATH\")";; esac
	@echo "bash completes from $(BASHCOMP) through the bash-completion package (apt-get install bash-completion)"
	@echo "zsh completes from $(dir $(ZSHCOMP)) when it is on \$$fpath; man sessionfs lists the commands"
	@echo "next: sessionfs mount --daemon, then sessionfs new, then sessionfs exec ID -- claude"

uninstall:
	rm -f $(BINDIR)/sessionfs $(BINDIR)/sessionfs-backends $(BASHCOMP) $(ZSHCOMP) $(FISHCOMP) $(MANDIR)/sessionfs.1 $(MANDIR)/sessionfs-*.1

# make install and uninstall into a temporary PREFIX, and man reading a page there.
install-test:
	scripts/install-test

# Every stage runs even when one before it fails (a unit failure must not hide the fuzz and e2e results); the
# failed ones are named at the end and make fails.
TEST_STAGES := vet unit install-test fuzz e2e
test:
	@failed=""; for s in $(TEST_STAGES); do \
		echo "=== make $$s"; $(MAKE) --no-print-directory $$s || failed="$$failed $$s"; \
	done; \
	if [ -n "$$failed" ]; then echo "make test: failed stages:$$failed"; exit 1; fi; echo "make test: every stage passed ($(TEST_STAGES))"

# Every package go list names but the e2e suite's (make e2e), then the whole suite of the go-fuse copy
# (third_party/go-fuse: upstream's tests and the takeover patch's, TAKEOVER.md) but for the upstream tests that
# fail on pristine go-fuse v2.12.1 here too, named with why in third_party/go-fuse/UPSTREAM-TESTS-SKIPPED.md: the
# skip pattern is built from that list's "- `TestName`" lines, so the list and what is skipped cannot drift apart.
unit: $(VERSITYGW_BIN)
	SESSIONFS_VERSITYGW=$(VERSITYGW_BIN) $(GO) test -race -count=1 $$($(GO) list ./... | grep -v '/e2e\(/\|$$\)')
	cd third_party/go-fuse && skip=$$(awk -F'`' '/^- `Test/ { printf "%s%s", sep, $$2; sep = "|" }' UPSTREAM-TESTS-SKIPPED.md) && \
		echo "go-fuse: skipping $$skip (UPSTREAM-TESTS-SKIPPED.md)" && \
		$(GO) test -race -count=1 -skip "^($$skip)\$$" ./...
	scripts/go-fuse-patches-test   # the copy is upstream v2.12.1 plus third_party/go-fuse/patches, nothing else

# Skipped tests (a missing requirement outside CI) are listed at the end, with why. The suite ran past 30 minutes
# once round 4's attack tests joined it (64-128 MiB hostile chats and transcripts, hard-linked 400 times): 50.
e2e: build claude agents $(DEVCONTAINER_BIN) $(VERSITYGW_BIN)
	@mkdir -p e2e/.cache; rm -f e2e/.cache/skips.txt
	SESSIONFS_BIN=$(CURDIR)/$(BIN) SESSIONFS_CLAUDE=$(CLAUDE_BIN) SESSIONFS_CLAUDE_NEW=$(CLAUDE_NEW_BIN) SESSIONFS_SKIPS=$(CURDIR)/e2e/.cache/skips.txt \
		SESSIONFS_DEVCONTAINER=$(DEVCONTAINER_BIN) SESSIONFS_VERSITYGW=$(VERSITYGW_BIN) \
		SESSIONFS_CODEX=$(CODEX_BIN) SESSIONFS_GEMINI=$(GEMINI_BIN) SESSIONFS_QWEN=$(QWEN_BIN) SESSIONFS_OPENCODE=$(OPENCODE_BIN) SESSIONFS_PI=$(PI_BIN) \
		SESSIONFS_KIMI=$(KIMI_BIN) SESSIONFS_COPILOT=$(COPILOT_BIN) \
		$(GO) test -race -count=1 -timeout 50m ./e2e/...; status=$$?; \
		if [ -s e2e/.cache/skips.txt ]; then echo "skipped e2e tests:"; cat e2e/.cache/skips.txt; fi; exit $$status

# Short fuzz runs of the targets over hostile input: ids, container paths, the sanitizer, transcripts, archives.
# Each target runs even when one before it fails; the failed ones are named.
FUZZ_TARGETS := layout:FuzzValidateID:$(FUZZTIME) layout:FuzzContainerMapping:$(FUZZTIME) agents/claude:FuzzSanitize:$(FUZZTIME) \
	agents/claude:FuzzScanEntries:$(FUZZTIME) travel:FuzzImport:$(FUZZTIME_IMPORT) merge:FuzzLines:$(FUZZTIME) merge:FuzzConversation:$(FUZZTIME)
fuzz:
	@failed=""; for t in $(FUZZ_TARGETS); do \
		pkg=$${t%%:*}; rest=$${t#*:}; name=$${rest%%:*}; n=$${rest#*:}; \
		echo "$(GO) test ./$$pkg/ -run '^$$' -fuzz '^$$name$$' -fuzztime $$n"; \
		$(GO) test ./$$pkg/ -run '^$$' -fuzz "^$$name\$$" -fuzztime $$n || failed="$$failed $$name"; \
	done; [ -z "$$failed" ] || { echo "fuzz: failed:$$failed"; exit 1; }

claude: $(CLAUDE_BIN) $(CLAUDE_NEW_BIN)

$(VERSITYGW_BIN):
	GOBIN=$(dir $@) $(GO) install github.com/versity/versitygw/cmd/versitygw@$(VERSITYGW_VERSION)

$(CURDIR)/e2e/.cache/claude-%/node_modules/.bin/claude:
	mkdir -p $(CURDIR)/e2e/.cache/claude-$*
	npm install --prefix $(CURDIR)/e2e/.cache/claude-$* --no-audit --no-fund @anthropic-ai/claude-code@$*

agents: $(CODEX_BIN) $(GEMINI_BIN) $(QWEN_BIN) $(OPENCODE_BIN) $(PI_BIN) $(KIMI_BIN) $(COPILOT_BIN)

# The newest agent CLIs the registry serves, driven offline through the e2e tests that read their files (text view,
# search, log, export, import, resume from another folder): fails when our readers miss what a newer CLI writes.
# make test runs the same tests on the pins above.
agents-drift: build claude agents
	SESSIONFS_CLAUDE=$(CLAUDE_BIN) SESSIONFS_CLAUDE_NEW=$(CLAUDE_NEW_BIN) SESSIONFS_CODEX=$(CODEX_BIN) SESSIONFS_GEMINI=$(GEMINI_BIN) \
		SESSIONFS_QWEN=$(QWEN_BIN) SESSIONFS_OPENCODE=$(OPENCODE_BIN) SESSIONFS_PI=$(PI_BIN) SESSIONFS_KIMI=$(KIMI_BIN) \
		SESSIONFS_COPILOT=$(COPILOT_BIN) scripts/agents-drift $(CURDIR)/$(BIN) \
		claude=@anthropic-ai/claude-code codex=@openai/codex gemini=@google/gemini-cli qwen=@qwen-code/qwen-code \
		opencode=opencode-ai pi=@earendil-works/pi-coding-agent,node-linux-$(PI_NODE_ARCH)@$(PI_NODE_VERSION) \
		kimi=@moonshot-ai/kimi-code,node-linux-$(PI_NODE_ARCH)@$(PI_NODE_VERSION) copilot=@github/copilot

# Which of the pins above the registry has moved past (asks npm; no test depends on it).
agents-check:
	@scripts/agents-check claude=@anthropic-ai/claude-code@$(CLAUDE_NEW_VERSION) codex=@openai/codex@$(CODEX_VERSION) \
		gemini=@google/gemini-cli@$(GEMINI_VERSION) qwen=@qwen-code/qwen-code@$(QWEN_VERSION) \
		opencode=opencode-ai@$(OPENCODE_VERSION) pi=@earendil-works/pi-coding-agent@$(PI_VERSION) \
		kimi=@moonshot-ai/kimi-code@$(KIMI_VERSION) copilot=@github/copilot@$(COPILOT_VERSION)

$(CODEX_BIN):
	mkdir -p $(CURDIR)/e2e/.cache/codex-$(CODEX_VERSION)
	npm install --prefix $(CURDIR)/e2e/.cache/codex-$(CODEX_VERSION) --no-audit --no-fund @openai/codex@$(CODEX_VERSION)
$(GEMINI_BIN):
	mkdir -p $(CURDIR)/e2e/.cache/gemini-$(GEMINI_VERSION)
	npm install --prefix $(CURDIR)/e2e/.cache/gemini-$(GEMINI_VERSION) --no-audit --no-fund @google/gemini-cli@$(GEMINI_VERSION)
$(QWEN_BIN):
	mkdir -p $(CURDIR)/e2e/.cache/qwen-$(QWEN_VERSION)
	npm install --prefix $(CURDIR)/e2e/.cache/qwen-$(QWEN_VERSION) --no-audit --no-fund @qwen-code/qwen-code@$(QWEN_VERSION)
$(PI_BIN):
	mkdir -p $(CURDIR)/e2e/.cache/pi-$(PI_VERSION)
	npm install --prefix $(CURDIR)/e2e/.cache/pi-$(PI_VERSION) --no-audit --no-fund @earendil-works/pi-coding-agent@$(PI_VERSION) \
		node-linux-$(PI_NODE_ARCH)@$(PI_NODE_VERSION)
$(KIMI_BIN):
	mkdir -p $(CURDIR)/e2e/.cache/kimi-$(KIMI_VERSION)
	npm install --prefix $(CURDIR)/e2e/.cache/kimi-$(KIMI_VERSION) --no-audit --no-fund @moonshot-ai/kimi-code@$(KIMI_VERSION) \
		node-linux-$(PI_NODE_ARCH)@$(PI_NODE_VERSION)
# Copilot's npm package is a loader of the platform's binary (an optional dependency, @github/copilot-linux-x64).
$(COPILOT_BIN):
	mkdir -p $(CURDIR)/e2e/.cache/copilot-$(COPILOT_VERSION)
	npm install --prefix $(CURDIR)/e2e/.cache/copilot-$(COPILOT_VERSION) --no-audit --no-fund @github/copilot@$(COPILOT_VERSION)
$(DEVCONTAINER_BIN):
	mkdir -p $(CURDIR)/e2e/.cache/devcontainer-$(DEVCONTAINER_VERSION)
	npm install --prefix $(CURDIR)/e2e/.cache/devcontainer-$(DEVCONTAINER_VERSION) --no-audit --no-fund @devcontainers/cli@$(DEVCONTAINER_VERSION)
# opencode is one compiled binary (npm's opencode-ai installs the one of this platform as bin/opencode.exe).
$(OPENCODE_BIN):
	mkdir -p $(CURDIR)/e2e/.cache/opencode-$(OPENCODE_VERSION)
	npm install --prefix $(CURDIR)/e2e/.cache/opencode-$(OPENCODE_VERSION) --no-audit --no-fund opencode-ai@$(OPENCODE_VERSION)

fmt:
	gofmt -w $$(git ls-files '*.go')

vet:
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || { echo "gofmt needed:"; gofmt -l $$(git ls-files '*.go'); exit 1; }
	$(GO) vet ./...
	$(GO) vet -tags nobackends ./cmd/sessionfs

clean:
	rm -rf bin e2e/.cache

# The benchmark: a plain folder (the baseline) vs the store's folder vs the mount vs bindfs, in one run, with the daemons' CPU
# (BENCH_FLAGS=-size=268435456 ... to shrink it; go run ./cmd/sessionfs-bench -h lists the flags).
BENCH_FLAGS ?=
bench: build
	$(GO) run ./cmd/sessionfs-bench -sessionfs $(BIN) $(BENCH_FLAGS)

# Images (contrib/docker): make agent-image builds sessionfs-agent:latest, the Claude CLI (CLAUDE_NEW_VERSION)
# and the AGENTS named (AGENTS="codex gemini qwen opencode pi kimi copilot", at the pins above); make csi-image builds
# sessionfs-csi:latest, the plugin contrib/kubernetes names. No registry is needed: the base is imported from this
# machine's node and npm (or fusermount3) and busybox, unless AGENT_BASE or CSI_BASE names one (node:22-slim,
# debian:bookworm-slim). npm must be reachable from a build container. Unchanged inputs: the image is kept.
AGENTS      ?=
AGENT_IMAGE ?= sessionfs-agent:latest
AGENT_BASE  ?=
CSI_IMAGE   ?= sessionfs-csi:latest
CSI_BASE    ?=
.PHONY: agent-image csi-image
agent-image:
	@base="$(AGENT_BASE)"; [ -n "$$base" ] || base=$$($(GO) run ./cmd/sessionfs-imagebase agent) || exit 1; \
	scripts/image-build $(AGENT_IMAGE) "$$base" contrib/docker/agent/Dockerfile contrib/docker/agent \
		CLAUDE_VERSION=$(CLAUDE_NEW_VERSION) CODEX_VERSION=$(CODEX_VERSION) GEMINI_VERSION=$(GEMINI_VERSION) \
		QWEN_VERSION=$(QWEN_VERSION) OPENCODE_VERSION=$(OPENCODE_VERSION) PI_VERSION=$(PI_VERSION) \
		KIMI_VERSION=$(KIMI_VERSION) COPILOT_VERSION=$(COPILOT_VERSION) "AGENTS=$(AGENTS)"

# The context is a folder holding only the binary: the whole CLI (the plugin is a backend command).
csi-image: build
	@mkdir -p bin/csi-image && cp $(BACKENDS) bin/csi-image/sessionfs; \
	base="$(CSI_BASE)"; [ -n "$$base" ] || base=$$($(GO) run ./cmd/sessionfs-imagebase csi) || exit 1; \
	scripts/image-build $(CSI_IMAGE) "$$base" contrib/docker/csi/Dockerfile bin/csi-image
