# vipd — see README.md. `make demo` and `make test` are the two commands a
# fresh Debian 12 machine needs (as root).

export PATH := $(PATH):/usr/local/go/bin
GO ?= go
STATICCHECK := honnef.co/go/tools/cmd/staticcheck@v0.8.2
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
COMMIT ?= $(shell git rev-parse --short HEAD 2>/dev/null)
LDFLAGS := -s -w -X main.version=$(VERSION) -X main.commit=$(COMMIT)
# Namespace tests run daemons with sub-second timers: two packages at a time
# keep a 2-core machine responsive enough.
TESTFLAGS ?= -count=1 -p 2 -timeout 20m

.PHONY: all build deps demo bench test test-short lint fuzz clean \
	man deb rpm package-lint ansible-lint packaging-deps e2e e2e-migrate install

all: build

# Pure Go, as in the packages: no C library mapped beside the daemon.
build:
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags '$(LDFLAGS)' -o bin/vipd ./cmd/vipd
	$(GO) build -trimpath -o bin/vipd-lab ./cmd/vipd-lab

deps:
	.ci/install-deps

# The lab: three nodes and a client in network namespaces; election,
# failover and a graceful handover, as a timeline.
demo: deps build
	bin/vipd-lab demo --vipd bin/vipd

# Failover benchmark, vipd beside keepalived in the same run (results/),
# then the chaos suite (issue 11): faults, both daemons per scenario
# (results/chaos.json, chaos.txt). CHAOSFLAGS=--quick for the short windows.
# Then the scale run (issue 16): steady CPU, RSS and wake-ups per interval
# (three rounds of labs built anew, pooled), 1..255 groups, a 255-group failover, background ARP; it reuses the bench's
# cut trials (results/scale.json, scale.txt). SCALEFLAGS=--quick: ~2 minutes.
CHAOSFLAGS ?=
SCALEFLAGS ?=
bench: deps build
	bin/vipd-lab bench --vipd bin/vipd --out results
	bin/vipd-lab bgp-bench --vipd bin/vipd --out results
	$(GO) test -run '^$$' -bench . -benchmem ./vrrp/ ./daemon/ ./arp/ ./announce/
	bin/vipd-lab chaos --vipd bin/vipd --out results $(CHAOSFLAGS)
	bin/vipd-lab scale --vipd bin/vipd --bench results/bench.json --out results $(SCALEFLAGS)

# The tiers that need no root (pure and fakes), run again under the race
# detector: they hold the election's concurrency.
RACE_PKGS := ./vrrp/... ./announce/... ./hoststat/... ./config/... ./control/... ./metrics/... ./systemd/... ./daemon/... ./health/... ./internal/ktimer/... ./internal/residency/...

# Every test: pure, fakes, and (as root) the namespace, interop and lab tests.
test: deps lint
	$(GO) test -race -short -count=1 $(RACE_PKGS)
	$(GO) test $(TESTFLAGS) ./...

# Unprivileged quick loop: the namespace tests skip themselves.
test-short:
	$(GO) test -count=1 -short ./...

lint:
	@fmt=$$(gofmt -l .); if [ -n "$$fmt" ]; then echo "gofmt needed:"; echo "$$fmt"; exit 1; fi
	$(GO) vet ./...
	GOOS=darwin $(GO) vet ./vrrp/ ./announce/ ./hoststat/ ./config/ ./netif/ ./arp/ ./ndp/ ./transport/ ./health/ ./control/ ./systemd/ ./metrics/ ./internal/sched/ ./internal/ktimer/ ./internal/residency/
	$(GO) run $(STATICCHECK) ./...
	$(GO) mod tidy -diff

fuzz:
	$(GO) test -run '^$$' -fuzz FuzzDecode -fuzztime 60s ./vrrp/

# Man pages vipd(8), vipd.toml(5) from docs/*.md into dist/man.
man:
	packaging/build.sh man

# dist/ packages for amd64 and arm64 (nfpm through go run, pinned).
deb:
	VERSION=$(VERSION) COMMIT=$(COMMIT) packaging/build.sh deb
rpm:
	VERSION=$(VERSION) COMMIT=$(COMMIT) packaging/build.sh rpm

packaging-deps:
	packaging/e2e/install-deps

# lintian, rpm -qpi/-qpl, the same files in both, systemd-analyze verify and
# the security score.
package-lint: packaging-deps
	packaging/build.sh lint

ansible-lint: packaging-deps
	ansible-lint --nocolor packaging/ansible

# Three systemd containers, the Ansible role, failover, upgrade, reload,
# watchdog (systemd-nspawn; the root file system is cached).
e2e: packaging-deps
	packaging/e2e/run.sh

# keepalived to vipd with migrate-from-keepalived.yml on three such
# containers, watched from the host: no VIP moves, never two holders.
e2e-migrate: packaging-deps
	packaging/e2e/migrate.sh

install:
	packaging/install.sh

clean:
	rm -rf bin dist
