# asap2-e2e: end-to-end validation of NVIDIA ASAP² Direct in MOSK clouds.
#
#   make test                    unit tests (no cloud needed)
#   make race                    the concurrent packages' unit tests under the race detector
#   make e2e CONFIG=target.yaml  the suites against a cloud
#   make fleet CONFIG=fleet.yaml the fleet sweep (a config with fleet:, docs/CONFIG.md)
#   make lab                     the whole job on the local lab (install, up, suites, report, down)
#   make dist                    dist/: the suites and tools, static, runnable with no Go (docs/DEPLOY.md)
#   make image                   out/image: dist/ as an OCI image layout (and out/asap2-e2e.tar)

SHELL        := /bin/bash
GO           ?= go
CONFIG       ?=
# JUnit and ginkgo reports; OUT, when given, also overrides run.output_dir.
REPORT_DIR   ?= $(CURDIR)/out
OUT          ?=
LABELS       ?=
FOCUS        ?=
SUITES       ?= ./suites/perf
GINKGO_FLAGS ?=
# Ginkgo's --timeout for make e2e; empty = the config's allowance (go run ./tools/budget CONFIG).
E2E_TIMEOUT  ?=
FUZZTIME     ?= 300000x
# The harness commit a run records (environment.harness): a test binary carries no VCS
# stamp, so make e2e passes the checkout's through -ldflags (e2e/buildinfo).
HARNESS_REVISION ?= $(shell git rev-parse HEAD 2>/dev/null)
HARNESS_MODIFIED ?= $(shell test -n "$$(git status --porcelain 2>/dev/null)" && echo true || echo false)
HARNESS_LDFLAGS  := $(if $(HARNESS_REVISION),-X github.com/mosk-qa/asap2-e2e/e2e/buildinfo.Revision=$(HARNESS_REVISION) -X github.com/mosk-qa/asap2-e2e/e2e/buildinfo.Modified=$(HARNESS_MODIFIED))

export PATH := /usr/bin:/usr/sbin:/bin:/sbin:$(PATH)
# One build configuration for every target: make test, make race, make lab's suites and tools and
# make dist (tools/dist.sh, and make test's TestDistRunsWithoutGoToolchain) all compile -trimpath,
# so each compiled package is built once and found in the build cache by the others. With a cold
# cache (a fresh machine, CI from nothing) the dist test alone otherwise compiled the whole module
# and its dependencies (client-go, gophercloud) a second time: 195 compiles for e2e/config alone.
export GOFLAGS := $(strip $(filter-out -trimpath,$(GOFLAGS)) -trimpath)
# And cgo off, as make dist's static binaries have it (nothing here needs cgo: the SQLite driver is
# modernc.org's, DNS and user lookups Go's own): with cgo on, every package of the module and its
# dependencies, the standard library included, compiled a second time for dist/ and make image.
# make race alone turns it on: the race detector needs cgo.
export CGO_ENABLED := 0

.PHONY: all build vet test race fuzz e2e smoke fleet lab clean dist image

all: vet test

build:
	$(GO) build ./...

vet:
	$(GO) vet ./...

# Unit tests: every package, the suites included. Without a target the suites skip
# (smoke and perf say "no target cloud"; the fault matrix's lab rows say how to run
# them) and only their pure tests run, so the variables that point them at a cloud
# or the lab are cleared here. Then the lab's own unit test (guestctl's, cloud_setup's and kube_setup's pure parts: no root,
# no OVS); its self-tests need root and the lab's packages, so .ci/run runs them.
# -timeout 30m: a hang guard, not a speed target. go test's default 10 minutes a package ended
# tools/asap2-e2e's dist test on a fresh, loaded machine while it still compiled (docs/MEASUREMENTS.md,
# 2026-12-06); it shares make test's build cache now (GOFLAGS above) and took 257 s from an empty one.
# TEST_PKGS: the Go packages (default all); TEST_RUN: a go test -run pattern (default every test).
# .ci/run names the failed packages and tests to judge again in the foreground (lab/lib/gotest_failures.py).
TEST_PKGS ?= ./...
PY_TESTS := lab/guest/test_guestctl.py lab/lib/test_cloud_setup.py lab/lib/test_gotest_failures.py lab/lib/test_phase_why.py \
  lab/kube/test_kube_setup.py lab/kube/test_podrun.py lab/kube/test_ci_from_nothing.py
test: vet
	env -u ASAP2E2E_CONFIG -u ASAP2E2E_FAULTS $(GO) test -count=1 -timeout 30m $${TEST_RUN:+-run "$$TEST_RUN"} $(TEST_PKGS)
	@if command -v python3 >/dev/null; then python3 -m unittest $(PY_TESTS); \
	  else echo "make test: no python3 here: $(PY_TESTS) not run"; fi

# The race detector over the packages with real concurrency: goroutines, state a fleet's
# concurrent pairs share, processes started and stopped, servers their tests run. The others
# are pure (parsers, judges, plans, the report): -race would add only build time there.
#   e2e/remote/...       the one process supervisor, SSH sessions, exec streams, bounds and their looks
#   e2e/evidence         the window's checks beside its flows; a fleet round's Barrier
#   e2e/harness          the fleet's pairs at once, Gate, the CPU and drop readings, the look
#   e2e/iperf3 e2e/sockperf e2e/offload   servers, clients and captures as processes beside each other
#   e2e/cloud e2e/results   the transport, redactor, rate-limit count and results Writer the pairs share
#   e2e/wait e2e/faultproxy e2e/framework   polls, a proxy serving requests at once, interrupts
#   e2e/history/store    concurrent ingest
#   fixtures             a fleet's provisioning and teardown in parallel (and fixtures/fakecloud under them)
#   lab/faultlab lab/oidc   the matrix's child processes and interrupts; the issuer's handlers
# CI runs it in the background beside the lab jobs (.ci/run, docs/CI.md).
RACE_PKGS := ./e2e/remote/... ./e2e/evidence ./e2e/harness ./e2e/iperf3 ./e2e/sockperf ./e2e/offload \
  ./e2e/cloud ./e2e/results ./e2e/wait ./e2e/faultproxy ./e2e/framework ./e2e/history/store \
  ./fixtures/... ./lab/faultlab ./lab/oidc
# RACE_RUN: a go test -run pattern, as TEST_RUN.
race:
	env -u ASAP2E2E_CONFIG -u ASAP2E2E_FAULTS CGO_ENABLED=1 $(GO) test -race -count=1 -timeout 30m $${RACE_RUN:+-run "$$RACE_RUN"} $(RACE_PKGS)

# Bounded fuzzing of every parser (each target for FUZZTIME: a count of calls, Nx, or a duration; see tools/fuzz-all.sh).
fuzz:
	@bash tools/fuzz-all.sh $(FUZZTIME)

# Run the suites against a target. Labels select what runs, e.g.
#   make e2e CONFIG=mosk.yaml LABELS='tcp && !baseline'
e2e:
	@test -n "$(CONFIG)" || { echo "usage: make e2e CONFIG=<harness config file> [LABELS=...] [FOCUS=...]" >&2; exit 2; }
	@mkdir -p $(REPORT_DIR)
	@# The suite's outer timeout comes from the config (go run ./tools/budget CONFIG shows how):
	@# every step has its own bound, this only stops a run that outlives them all.
	timeout=$(or $(E2E_TIMEOUT),$$($(GO) run ./tools/budget -ginkgo-timeout $(abspath $(CONFIG)))) || exit 2; \
	ASAP2E2E_CONFIG=$(abspath $(CONFIG)) $(if $(OUT),ASAP2E2E_OUTPUT_DIR=$(abspath $(OUT))) \
	  $(GO) tool ginkgo -v --timeout=$$timeout --junit-report=junit.xml --output-dir=$(REPORT_DIR) \
	  $(if $(HARNESS_LDFLAGS),--ldflags='$(HARNESS_LDFLAGS)') \
	  $(if $(LABELS),--label-filter='$(LABELS)') $(if $(FOCUS),--focus='$(FOCUS)') $(GINKGO_FLAGS) $(SUITES)

smoke:
	$(MAKE) e2e SUITES=./suites/smoke

fleet:
	$(MAKE) e2e SUITES=./suites/fleet

# dist/: the suites' test binaries, the tools and the launcher, static (CGO_ENABLED=0), with the
# harness's version and commit linked in (lab/lib/buildinfo.sh); runs with no Go toolchain.
DIST ?= $(CURDIR)/dist
dist:
	bash tools/dist.sh $(DIST)

# The OCI image of dist/ (no container daemon): an image layout, and a docker archive for
# podman/docker load; prints its tag, digest and size. docs/DEPLOY.md.
IMAGE_DIR ?= $(REPORT_DIR)/image
image: dist
	$(GO) run ./tools/image -dist $(DIST) -o $(IMAGE_DIR) -docker-archive $(REPORT_DIR)/asap2-e2e.tar

include lab/lab.mk

# The whole job on the local lab: install, up, suites (baseline), the negative
# asap2 run, the report, down. Non-zero when a spec failed.
lab:
	OUT=$(or $(OUT),$(REPORT_DIR)/lab) bash lab/job.sh

clean:
	rm -rf $(REPORT_DIR)
