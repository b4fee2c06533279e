# ejob build, test and benchmark entry points. `make test` is what CI runs.
GO        ?= go
BIN       := bin
PLUGINBIN := $(BIN)/plugins
# Every main package under plugins/ and examples/ whose directory is named ejob-*
# becomes a plugin binary of that name. Built-ins go to bin/plugins/builtin/
# (not scanned: the ejob binary serves built-ins itself; these are standalone
# copies for overriding or running alone), examples to bin/plugins/.
BUILTIN_MAINS := $(shell $(GO) list -f '{{if eq .Name "main"}}{{.Dir}}{{end}}' ./plugins/... 2>/dev/null)
EXAMPLE_MAINS := $(shell $(GO) list -f '{{if eq .Name "main"}}{{.Dir}}{{end}}' ./examples/... 2>/dev/null | grep '/ejob-[^/]*$$')

.PHONY: bench-gocron bench-cluster test-cloud bench-cloud launcher-kubernetes chaos-short upgrade all build test lint vet fmt-check imports bench proto demo demo-plugins demo-cluster demo-cloud clean chaos

all: build

build:
	@mkdir -p $(PLUGINBIN)/builtin
	$(GO) build -o $(BIN)/ejob ./cmd/ejob
	@set -e; for d in $(BUILTIN_MAINS); do n=$$(basename $$d); \
	  case $$n in ejob-*) echo "go build $$n"; $(GO) build -o $(PLUGINBIN)/builtin/$$n $$d;; esac; done
	@set -e; for d in $(EXAMPLE_MAINS); do n=$$(basename $$d); \
	  echo "go build $$n"; $(GO) build -o $(PLUGINBIN)/$$n $$d; done

# fmt-check, vet and the import rules fail the build before any test runs.
lint: fmt-check vet imports

fmt-check:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null; git ls-files --others --exclude-standard '*.go' 2>/dev/null)); \
	  if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi

vet:
	$(GO) vet ./...

imports:
	$(GO) test -count=1 ./internal/archtest

# The chaos suite's short form runs last, on its own (go test ./... skips it:
# it needs -chaos.run), so its timing is not judged while other packages
# load both cores. CHAOS_SEED fixes its fault schedule (docs/chaos.md).
CHAOS_SEED ?= 3

test: lint build
	$(GO) test -race -count=1 -timeout 20m ./...
	$(GO) test -count=1 -timeout 10m ./test/chaos -run TestChaos -chaos.run -chaos.seed=$(CHAOS_SEED)
	@if [ -n "$$EJOB_K8S_BUILD" ] || bash scripts/k8s.sh bin >/dev/null 2>&1; then $(MAKE) test-cloud; \
	  else echo "test-cloud skipped: no cached Kubernetes binaries (scripts/k8s.sh build, or EJOB_K8S_BUILD=1 to build them)"; fi

# The Kubernetes launcher's module (its own go.mod) against a real control
# plane that scripts/k8s.sh starts (docs/cloud.md, "Test cluster"): items
# run on test node agents, and kwoktest's lifecycle tests on kwok nodes; about
# 8 minutes on 2 cores. Its tests skip with a message when the binaries (or
# kwok) are not cached and EJOB_K8S_BUILD is unset; with EJOB_K8S_BUILD=1 the
# first run builds them (minutes) before the tests start, so the build is not
# inside their timeout.
test-cloud:
	@if [ -n "$$EJOB_K8S_BUILD" ]; then bash scripts/k8s.sh build; fi
	cd plugins/launcher/kubernetes && $(GO) vet ./... && $(GO) test -race -count=1 -timeout 20m ./...

# The Kubernetes launcher's plugin binary (its own module, so not part of
# build: the first build compiles client-go, a minute or two).
launcher-kubernetes:
	@mkdir -p $(PLUGINBIN)
	cd plugins/launcher/kubernetes && $(GO) build -o $(CURDIR)/$(PLUGINBIN)/ejob-launcher-kubernetes ./cmd/ejob-launcher-kubernetes

bench:
	$(GO) test -run '^$$' -bench . -benchmem -count=1 -timeout 30m ./...
	cd bench/gocron && $(GO) test -run '^$$' -bench . -benchtime 1x -count=1 -timeout 10m .

# 10,000 idle jobs, ejob (the library on its embedded registry) beside
# gocron v2, a process each, in PAIRS alternated pairs: registration time,
# heap and RSS side by side and their median ratios (part of bench too).
PAIRS ?= 5
bench-gocron:
	cd bench/gocron && EJOB_BENCH_PAIRS=$(PAIRS) $(GO) test -run '^$$' -bench IdleJobsSameRun -benchtime 1x -count=1 -timeout 10m -v .

# The Kubernetes launcher's benchmarks on the test control plane (cached
# binaries needed, as for test-cloud): fire to process on a test node, a
# fire of 100 items on a test node and on kwok's nodes. One package at a
# time, so that the two clusters do not share the cores.
bench-cloud:
	cd plugins/launcher/kubernetes && $(GO) test -p 1 -run '^$$' -bench . -benchtime 3x -count=1 -timeout 30m . ./kwoktest

# The many-host benchmark (bench/cluster): HOSTS real `ejob run` processes on
# a 3-member ensemble from scripts/zk.sh, JOBS idle jobs a host (each job
# group on REPLICAS hosts), then FIRE_JOBS jobs of FIRE_ITEMS items every
# second on every host (FIRE_TYPE SCRIPT or HTTP) and one host killed. It prints its figures; it takes
# minutes, so it is not part of bench. BENCH_CLUSTER_FLAGS adds flags.
HOSTS      ?= 3
JOBS       ?= 500
REPLICAS   ?= 2
FIRE_JOBS  ?= 50
FIRE_ITEMS ?= 4
FIRE_TYPE  ?= SCRIPT
bench-cluster:
	$(GO) run ./bench/cluster -hosts $(HOSTS) -jobs $(JOBS) -replicas $(REPLICAS) \
	  -fire-jobs $(FIRE_JOBS) -fire-items $(FIRE_ITEMS) -fire-type $(FIRE_TYPE) $(BENCH_CLUSTER_FLAGS)

# Regenerates the committed gRPC stubs (needs Debian's protobuf-compiler).
proto:
	bash scripts/gen-proto.sh

clean:
	rm -rf $(BIN)

# The main demo (README): a standalone host (no ZooKeeper) running a SCRIPT
# and an HTTP job for ~15 s; see scripts/demo.sh. demo-plugins is the plugin
# runtime demo: it builds bin/ejob and one example plugin (nothing else), then
# lists, previews, checks and pins with an explanation of each step.
demo:
	bash scripts/demo.sh

demo-plugins:
	bash scripts/demo.sh plugins

# Three hosts on a local ZooKeeper, kill -9 of one, its items moving to the
# survivors (~40 s); see scripts/demo-cluster.sh.
demo-cluster:
	bash scripts/demo-cluster.sh

# The cloud scheduler on a local Kubernetes control plane with two test
# nodes: an app and a TRANSIENT job registered with curl, a node killed, its
# item failed over (~1.5 min once the Kubernetes binaries are cached); see
# scripts/demo-cloud.sh.
demo-cloud:
	bash scripts/demo-cloud.sh

# The long form of the chaos suite (docs/chaos.md): random faults for DURATION
# on a standalone ZooKeeper, then on a 3-node ensemble (TOPOLOGY=standalone or
# ensemble for one), checked against the suite's invariants. SEED replays a
# schedule (0: from the clock; the seed is always printed). The short form
# runs in `make test`. DURATION=60m is the soak form (docs/chaos.md).
SEED     ?= 0
DURATION ?= 5m
TOPOLOGY ?= both
chaos:
	$(GO) test ./test/chaos -run TestChaos -count=1 -v -timeout 3h -chaos.run \
	  -chaos.seed=$(SEED) -chaos.duration=$(DURATION) -chaos.topology=$(TOPOLOGY)
	$(MAKE) upgrade SEED=$(SEED)

# The rolling upgrade (docs/chaos.md): a running 3-host cluster's hosts
# replaced one by one with ejob built from UPGRADE_FROM, then with this
# tree's again, while the jobs fire. UPGRADE_FROM is the newest commit that
# changed how ejob writes the registry's nodes (core/node's paths and
# values); about 2 min with a warm build cache, so not part of `make test`.
UPGRADE_FROM ?= e7d7e4b
upgrade:
	$(GO) test ./test/chaos -run TestRollingUpgrade -count=1 -v -timeout 20m -chaos.run \
	  -chaos.seed=$(SEED) -chaos.upgrade-from=$(UPGRADE_FROM)

# The short form of the chaos suite (standalone ZooKeeper, each fault once,
# about 90 s); `make test` runs it with CHAOS_SEED. SEED=0 (the default here)
# derives the schedule from the clock; the seed is always logged.
chaos-short:
	$(GO) test ./test/chaos -run TestChaos -count=1 -v -timeout 20m -chaos.run -chaos.seed=$(SEED)
