# kiggy — see README.md. `make run` starts the gateway on the embedded log;
# `make test` installs what the tests need and runs the whole suite.
GO ?= go
# staticcheck, pinned: 2026.2.2 (v0.8.2) supports Go 1.26; move it with go.mod's go line.
STATICCHECK ?= honnef.co/go/tools/cmd/staticcheck@v0.8.2

.PHONY: run build test tools lint unit iggy-mode iggy-mode-server iggy-mode-model net-engine race bench bench-micro

run:
	$(GO) run ./cmd/kiggy

build:
	$(GO) build -o bin/kiggy ./cmd/kiggy

# The whole suite: tools (kcat, Kafka 4.x jars, apache-iggy), lint, every
# test, the gateway suites again on the Iggy backend, then the race detector
# over the concurrent packages.
test: tools lint unit iggy-mode net-engine race

tools:
	./.ci/install-test-tools.sh

lint:
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
	$(GO) run $(STATICCHECK) ./...

unit:
	$(GO) test -count=1 -timeout 40m ./...

# The gateway's end-to-end, interop and ecosystem suites again, with kiggy
# on the Iggy backend: once against real iggy-server processes
# (KIGGY_IGGY_SERVER, default ../shared/iggy/bin/iggy-server) and once
# against the in-process iggytest model, so that where the two differ a
# test shows it (docs/IGGY.md, "Testing against a real iggy-server"); the
# ecosystem suite against kiggy only (the unit run has checked it against
# Kafka); and the hostile suite's state floods, each against kiggy on a
# fresh iggy-server.
iggy-mode: iggy-mode-server iggy-mode-model

iggy-mode-server:
	KIGGY_TEST_BACKEND=iggy KIGGY_TEST_IGGY=server $(GO) test -count=1 -timeout 30m ./bridge/ ./tests/interop/
	KIGGY_TEST_BACKEND=iggy KIGGY_TEST_IGGY=server KIGGY_ECOSYSTEM_TARGET=kiggy $(GO) test -count=1 -timeout 20m ./tests/ecosystem/
	KIGGY_TEST_BACKEND=iggy $(GO) test -count=1 -timeout 25m -run Flood ./tests/hostile/

# The model runs the gateway's own suite only: interop and ecosystem drive
# stock clients, whose Iggy path the real server proves.
iggy-mode-model:
	KIGGY_TEST_BACKEND=iggy KIGGY_TEST_IGGY=model KIGGY_IGGY_PROTOCOL=0.12 $(GO) test -count=1 -timeout 30m ./bridge/ ./bridge/iggy/
	KIGGY_TEST_BACKEND=iggy KIGGY_TEST_IGGY=model KIGGY_IGGY_PROTOCOL=0.11 $(GO) test -count=1 -timeout 30m ./bridge/ ./bridge/iggy/

# The hostile-input suite again on the portable net engine (--engine net);
# the unit run covers the default engine (epoll on Linux).
net-engine:
	KIGGY_TEST_ENGINE=net $(GO) test -count=1 -timeout 10m ./tests/hostile/

race:
	$(GO) test -count=1 -race -timeout 20m ./engine/... ./bridge/... ./quota/... ./security/...

bench-micro:
	$(GO) test -run '^$$' -bench . -benchmem -count 6 ./varint/ ./wire/ ./batch/ ./bridge/... ./engine/ | tee bench-micro.txt

bench:
	$(GO) run ./bench/cmd/kbench

# The container image (deploy/Containerfile) with buildah, tagged with the
# chart's appVersion (= kiggy version); its build stage pulls golang from
# Docker Hub. Not part of `make test` (deploy's tests check the recipe).
IMAGE ?= kiggy:$(shell sed -n 's/^appVersion: "\(.*\)"/\1/p' deploy/helm/kiggy/Chart.yaml)
.PHONY: image
image:
	buildah bud --layers -f deploy/Containerfile --build-arg COMMIT=$$(git rev-parse HEAD) -t $(IMAGE) .
