# kiggy — see README.md. `make run` starts the gateway on the embedded log;
# `make test` installs what the tests need and runs the whole suite.
GO ?= go
STATICCHECK_VERSION ?= 2026.1

.PHONY: run build test tools lint unit race bench bench-micro fuzz

run:
	$(GO) run ./cmd/kiggy

build:
	$(GO) build -o bin/kiggy ./cmd/kiggy

# The whole suite: tools (kcat, Kafka 4.x jars, apache-iggy), lint, every
# test, then the race detector over the concurrent packages.
test: tools lint unit race

tools:
	./.ci/install-test-tools.sh

lint:
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
	@command -v staticcheck >/dev/null 2>&1 || $(GO) install honnef.co/go/tools/cmd/staticcheck@latest
	PATH="$$PATH:$$($(GO) env GOPATH)/bin" staticcheck ./...

unit:
	$(GO) test -count=1 -timeout 40m ./...

race:
	$(GO) test -count=1 -race -timeout 20m ./engine/... ./bridge/...

bench-micro:
	$(GO) test -run '^$$' -bench . -benchmem -count 6 ./varint/ ./wire/ ./batch/ ./bridge/... ./engine/ | tee bench-micro.txt

bench:
	$(GO) run ./bench/cmd/kbench
