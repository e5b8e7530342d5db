# txexec — build, test, demo, benchmarks.
#   make build   bin/txexec and bin/txexec-launcher (the set-ID launcher's
#                template, launcher/launcher.c); the fast-lookup agent
#                txexec embeds (interpose/agent)
#   make test    vet, staticcheck, unit + e2e tests, the unit tests again with -race,
#                conformance (installs what it needs first)
#   make demo    builds txexec and shows a failed install rolled back, a good one committed
#   make bench   benchmarks; writes docs/performance.md and docs/perf-*.svg
#   make soak    long crash-injection and concurrency runs

GO        ?= go
GOFLAGS   ?=
export GOFLAGS
BIN       := bin/txexec
LAUNCHER  := bin/txexec-launcher
AGENT     := interpose/agent/agent.bin
# The launcher is a set-user-ID-root program: static (no loader, no shared
# library between the kernel and main), position-independent, with the
# compiler's hardening, and no warning allowed.
ifeq ($(origin CC),default)
CC        := gcc
endif
LAUNCHER_CFLAGS := -O2 -Wall -Wextra -Werror -fPIE -static-pie -fstack-protector-strong \
	-fstack-clash-protection -fcf-protection -D_FORTIFY_SOURCE=2 -Wl,-z,relro,-z,now,-z,noexecstack
PKGS      := ./...
# The packages of unit tests: all but the end-to-end tests and benchmarks,
# which run the built binary (the race detector would see nothing of it).
UNIT_PKGS  = $(shell $(GO) list ./... | grep -v -e /e2e -e /bench)
# Tools the checks use, installed by scripts/deps.sh.
TOOLS     := bin/tools
# The version txexec --version prints: git describe of the checkout (a
# source tree without git falls back on what the Go toolchain records).
VERSION   ?= $(shell git describe --tags --always --dirty 2>/dev/null)
LDFLAGS   := $(if $(VERSION),-X main.version=$(VERSION))

.PHONY: all build test unit e2e conformance demo bench soak deps vet lint race fmt docs clean install install-files deb

all: build

deps:
	@./scripts/deps.sh

build: deps $(LAUNCHER) $(AGENT)
	$(GO) build -ldflags '$(LDFLAGS)' -o $(BIN) ./cmd/txexec

# The fast-lookup agent (--fast-lookups), compiled by cc into the blob
# txexec embeds (checked in, so that go build alone works;
# TestAgentBlobIsCurrent fails when it is stale).
$(AGENT): interpose/agent/agent.c interpose/agent/agent.ld interpose/agent/build.sh
	sh interpose/agent/build.sh $@ $(CC)

$(LAUNCHER): launcher/launcher.c
	@mkdir -p $(dir $@)
	$(CC) $(LAUNCHER_CFLAGS) -o $@ $<

# Packages whose locks carry checklocks annotations (+checklocks:mu).
CHECKLOCKS_PKGS := ./proc ./interpose ./determ

vet: deps
	$(GO) vet $(PKGS)
	$(GO) vet -vettool=bin/tools/checklocks $(CHECKLOCKS_PKGS)
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || { echo "not gofmt-formatted:"; gofmt -l $$(git ls-files '*.go'); exit 1; }

# Generated documentation (golden tests fail while it is stale):
# docs/syscalls.md from the syscall table, the man page docs/txexec.1 and
# the bash completion docs/txexec.bash from the option table.
docs: deps
	$(GO) run ./cmd/gensyscalldocs -o docs/syscalls.md
	$(GO) run ./cmd/gentxexecdocs

lint: deps
	$(TOOLS)/staticcheck $(PKGS)

race: deps
	$(GO) test -count=1 -race -timeout 15m $(UNIT_PKGS)

test: build vet lint
	$(GO) test -count=1 -timeout 25m $(PKGS)
	$(MAKE) --no-print-directory race
	$(MAKE) --no-print-directory conformance

# make install [PREFIX=/usr/local] [DESTDIR=]: the binary, the launcher
# template that txexec wrap copies (PREFIX/lib/txexec, where txexec looks
# for it), the man page and the bash completion.
PREFIX    ?= /usr/local
install: build install-files

install-files:
	install -D -m 0755 $(BIN) $(DESTDIR)$(PREFIX)/bin/txexec
	install -D -m 0755 $(LAUNCHER) $(DESTDIR)$(PREFIX)/lib/txexec/txexec-launcher
	install -D -m 0644 docs/txexec.1 $(DESTDIR)$(PREFIX)/share/man/man1/txexec.1
	install -D -m 0644 docs/txexec.bash $(DESTDIR)$(PREFIX)/share/bash-completion/completions/txexec

# make deb: bin/txexec_VERSION_ARCH.deb (scripts/deb.sh).
deb: build
	@./scripts/deb.sh $(BIN) bin

conformance: build
	./scripts/conformance.sh

demo: build
	@./scripts/demo.sh

# Each round runs the per-call benchmarks (2000 calls per run; the floor with gaps 5 rounds of 10,000 calls per mode), the
# 2000-file commit (3 runs) and the workloads (one run of every phase in
# every mode; TXEXEC_BENCH_ROUND rotates their order from round to round).
# About 6 minutes a round on a 2-CPU machine. -p 1: go test would otherwise run bench/floor's
# benchmarks beside bench's, each package's binary taking one of the two CPUs the other measures.
# sync before each: the write-back of what the step before left dirty (the workloads write
# hundreds of MiB) added about 5 µs to txexec's overhead per call in the floor with gaps while
# it lasted (21 µs against 16 at the 100 µs gap, after a 300 MiB file left dirty).
BENCH_ROUNDS ?= 5
# The workloads install and remove Debian's hello with dpkg: they take the lock the e2e
# tests hold while they run (e2e/main_test.go), so that neither finds dpkg's lock taken.
SYSTEM_PATHS_LOCK = /tmp/txexec-e2e-system-paths.lock
bench: build
	@rm -f bench/out.txt; i=0; while [ $$i -lt $(BENCH_ROUNDS) ]; do i=$$((i + 1)); \
	  sync; $(GO) test -p 1 -run '^$$' -bench . -skip 'Commit2000|Workload|SupervisorSyscalls|Startup|InProgramServer|Parallel|FastLookups' -benchtime 2000x -timeout 30m ./bench/... 2>&1 | tee -a bench/out.txt; \
	  sync; $(GO) test -run '^$$' -bench Commit2000 -benchtime 3x -timeout 30m ./bench/ 2>&1 | tee -a bench/out.txt; \
	  sync; $(GO) test -run '^$$' -bench InProgramServer -benchtime 1x -timeout 30m ./bench/ 2>&1 | tee -a bench/out.txt; \
	  sync; TXEXEC_BENCH_ROUND=$$i flock $(SYSTEM_PATHS_LOCK) $(GO) test -run '^$$' -bench Workload -benchtime 1x -timeout 30m ./bench/ 2>&1 | tee -a bench/out.txt; \
	  sync; $(GO) test -run '^$$' -bench Parallel -benchtime 1x -timeout 30m ./bench/ 2>&1 | tee -a bench/out.txt; done
	@! grep -m1 '^switch-counter: getrusage' bench/out.txt >&2 || echo "make bench: no perf events here: context switches come from getrusage, CPU migrations are not counted" >&2
	$(GO) run ./bench/report -in bench/out.txt -o docs/performance.md
	@! grep -Eq '^(FAIL|--- FAIL|panic:)' bench/out.txt || { echo "make bench: a benchmark failed (listed in docs/performance.md)" >&2; exit 1; }

soak: build
	TXEXEC_SOAK=1 $(GO) test -count=1 -timeout 180m -run 'Crash|Concurrent|Soak' ./e2e/...

clean:
	rm -rf bin bench/out.txt
