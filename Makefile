# minik8s — see README.md. `make up` starts a cluster on this machine, `make test` tests it.
SHELL := /bin/bash
.DEFAULT_GOAL := help

export MINIK8S_HOME ?= $(HOME)/.minik8s

# Every module in go.work, as ./<dir>/... patterns: a module added to go.work joins every target.
MODULES := $(patsubst $(CURDIR)/%,./%,$(shell go list -m -f '{{.Dir}}' 2>/dev/null))
PKGS    := $(addsuffix /...,$(MODULES))
# Modules outside go.work that build alone (GOWORK=off) with their own dependency versions:
# the example operator (controller-runtime).
STANDALONE := test/operator
TEST_TIMEOUT ?= 40m
TEST_FLAGS ?=
COMPOSE := $(shell if docker compose version >/dev/null 2>&1; then echo "docker compose"; \
                   elif command -v docker-compose >/dev/null 2>&1; then echo docker-compose; fi)

.PHONY: help up down reset cluster cluster-down build test test-unit test-standalone test-compose test-compose-stack compose compose-down bench bench-rules images fmt vet lint clean

help: ## list targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-13s %s\n", $$1, $$2}'

up: ## prepare the host, build, start the control plane (idempotent)
	scripts/up.sh

down: ## stop what make up started; data in $(MINIK8S_HOME) stays
	scripts/down.sh

reset: down ## stop and DELETE the state directory (certificates, tokens, etcd data, logs) and the cluster's RabbitMQ vhost
	scripts/reset.sh

NODES ?= 2
cluster: ## a control plane and NODES (2) nodes on this host, each a network namespace with its own dockerd, kubelet, kubeproxy (idempotent)
	scripts/up.sh prepare
	scripts/cluster.sh up $(NODES)

cluster-down: ## remove make cluster's nodes, control plane processes, bridge, routes, broker vhost and user
	scripts/cluster.sh down

build: ## build the binaries into bin/
	scripts/up.sh build

test: test-compose test-standalone ## all tests of all modules (integration tests need make up first)
	@log=$$(mktemp /tmp/minik8s-token-refresh.XXXXXX); \
	echo "in the background: in-cluster clients' 600 s ServiceAccount tokens refreshed (about ten minutes; output at the end)"; \
	MINIK8S_E2E_TOKEN_REFRESH=1 go test -count=1 -timeout 20m -run '^TestInClusterTokenRefresh' ./test/e2e/ >$$log 2>&1 & refresh=$$!; \
	echo "go test -timeout $(TEST_TIMEOUT) $(TEST_FLAGS) $(PKGS)"; \
	go test -timeout $(TEST_TIMEOUT) $(TEST_FLAGS) $(PKGS); tests=$$?; \
	wait $$refresh; refreshed=$$?; \
	echo "token refresh (exit $$refreshed):"; cat $$log; rm -f $$log; \
	test $$tests = 0 && test $$refreshed = 0
	@echo "restarting RabbitMQ under a running apiserver (alone: it cuts every broker connection)"
	MINIK8S_E2E_BROKER_RESTART=1 go test -count=1 -timeout 10m -run '^TestBusAcrossBrokerRestart' ./test/e2e/
	@echo "the example operator across a stop and start of the whole cluster (alone: it stops every component)"
	MINIK8S_E2E_CLUSTER_RESTART=1 go test -count=1 -timeout 15m -run '^TestOperatorAcrossAClusterRestart$$' ./test/e2e/

test-unit: test-standalone ## unit tests only: -short skips tests that need RabbitMQ, Redis, etcd or Docker
	go test -short -timeout $(TEST_TIMEOUT) $(TEST_FLAGS) $(PKGS)

test-standalone: ## tests of the modules outside go.work (the example operator)
	@for m in $(STANDALONE); do echo "(cd $$m && GOWORK=off go test ./...)"; \
	  (cd $$m && GOWORK=off go test -timeout $(TEST_TIMEOUT) $(TEST_FLAGS) ./...) || exit 1; done

test-compose: ## check docker-compose.yml (TestComposeStack in test/e2e runs it)
	@test -n "$(COMPOSE)" || { echo "neither 'docker compose' nor docker-compose is installed" >&2; exit 1; }
	$(COMPOSE) -f docker-compose.yml config -q

test-compose-stack: ## TestComposeStack: docker-compose.yml on a Docker engine of its own in a network namespace (beside make up; about 25 min the first time, 6 after a source change; not in make test)
	MINIK8S_E2E_COMPOSE=1 go test -count=1 -timeout 45m -run '^TestComposeStack$$' ./test/e2e/

compose: ## the whole system in containers, nothing pulled: base and pause images, then docker compose up -d --build (not beside make up: same host ports)
	scripts/compose.sh up -d --build

compose-down: ## stop make compose's stack and its pods' containers (data stays; scripts/compose.sh down -v deletes it)
	scripts/compose.sh down

bench: bench-rules ## as root with make up running: kubeproxy's rule programming (bench-rules), then control plane vs raw etcd, pod startup vs raw Docker+CNI, ClusterIP vs pod IP and cluster DNS vs upstream; tables on stdout (BENCH_FLAGS=-suite=network, -profile)
	go run ./bench/cmd/bench -timeout 20m $(BENCH_FLAGS)

bench-rules: ## kubeproxy's rule benchmarks: the real iptables-restore in a scratch network namespace (as root)
	@test "$$(id -u)" = 0 || { echo "bench-rules: needs root (iptables-restore in a scratch network namespace)" >&2; exit 1; }
	go test -run '^$$' -bench . -benchtime 3x ./kubeproxy/internal/rules/ ./kubeproxy/internal/proxier/

images: ## images built locally, no registry: pause, echo, load, fileserver, incluster, echo-operator, busybox, debian (debootstrap), nginx, python-runtime, prometheus, node-exporter
	scripts/images.sh

fmt: ## gofmt all Go files
	gofmt -w $(MODULES)

vet: ## go vet all modules
	go vet $(PKGS)
	@for m in $(STANDALONE); do (cd $$m && GOWORK=off go vet ./...) || exit 1; done

lint: vet ## go vet and a gofmt check
	@out=$$(gofmt -l $(MODULES)); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi

clean: ## remove built binaries and cached test results (not the cluster state)
	rm -rf bin
	go clean -testcache
