# Everything a developer or CI runs. `make test` and `make demo` work on a fresh machine with Go:
# the control-plane binaries the tests need are built from the Go module proxy on first use.

GO            ?= go
BIN           := bin/router-hosts-operator
VERSION       ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
K8S_VERSION   ?= v1.37.2
ASSETS        := $(CURDIR)/.cache/envtest/$(K8S_VERSION)
TEST_TIMEOUT  ?= 20m
IMAGE         ?= ghcr.io/router-hosts-operator/router-hosts-operator
HELM_VERSION  ?= v3.22.0
HELM          := $(CURDIR)/.cache/helm/$(HELM_VERSION)/helm
# external-dns's own packages drive the webhook in a module of their own (test/externaldns), so
# that external-dns stays out of the operator's go.mod.
EXTERNAL_DNS_TESTS := test/externaldns

.PHONY: all build cross test unit integration soak demo bench lint generate envtest-assets helm clean fuzz image

all: lint build test

# grpcnotrace leaves out gRPC's x/net/trace (and html/template), which the operator never enables.
build:
	CGO_ENABLED=0 $(GO) build -tags grpcnotrace -trimpath -ldflags "-s -w -X main.version=$(VERSION)" -o $(BIN) .

# The image's platforms, cross-compiled (no Docker engine needed), so a break on one shows in CI.
PLATFORMS     := linux/amd64 linux/arm64 linux/arm/v7
cross:
	@for p in $(PLATFORMS); do \
	  os=$${p%%/*}; rest=$${p#*/}; arch=$${rest%%/*}; variant=$${rest#$$arch}; variant=$${variant#/v}; \
	  echo "cross-compiling for $$p"; \
	  GOOS=$$os GOARCH=$$arch GOARM=$$variant CGO_ENABLED=0 $(GO) build -tags grpcnotrace -trimpath -o /dev/null . || exit 1; \
	done

# Builds kube-apiserver and etcd once; cached under .cache/ afterwards.
envtest-assets: $(ASSETS)/kubectl
$(ASSETS)/kubectl:
	K8S_VERSION=$(K8S_VERSION) ASSETS=$(ASSETS) bash hack/envtest-assets.sh

# Builds helm once, from the Go module proxy, for the chart tests; cached under .cache/.
helm: $(HELM)
$(HELM):
	HELM_VERSION=$(HELM_VERSION) HELM_DIR=$(dir $(HELM)) bash hack/helm.sh

# Unit and integration tests; integration tests run a real kube-apiserver and etcd, and the
# chart tests the helm built above. The Traefik rule scanner is also fuzzed briefly (`make fuzz`
# runs it for longer). Last, the short soak: a fixed seed and a random one, 30 s of churn each,
# the operator built with the race detector; it runs alone, since it is timed against the
# machine's two cores.
test: envtest-assets helm lint cross
	HELM=$(HELM) KUBEBUILDER_ASSETS=$(ASSETS) $(GO) test -count=1 -timeout $(TEST_TIMEOUT) $$($(GO) list ./... | grep -v /test/soak)
	cd $(EXTERNAL_DNS_TESTS) && $(GO) test -count=1 -timeout $(TEST_TIMEOUT) ./...
	$(GO) test -run '^$$' -fuzz '^FuzzParseMatch$$' -fuzztime $(FUZZ_SMOKE) ./source/
	KUBEBUILDER_ASSETS=$(ASSETS) $(GO) test -count=1 -v -timeout $(TEST_TIMEOUT) ./test/soak/

FUZZ_SMOKE    ?= 30000x
# Each fuzz target in turn, for an execution count rather than a time: a -fuzztime deadline can
# end the run with "context deadline exceeded" while a worker is busy, which is not a finding.
# New findings land in testdata/fuzz/ beside the package.
FUZZ_TIME     ?= 300000x
fuzz:
	$(GO) test -run '^$$' -fuzz '^FuzzParseMatch$$' -fuzztime $(FUZZ_TIME) ./source/
	$(GO) test -run '^$$' -fuzz '^FuzzParseOverrides$$' -fuzztime $(FUZZ_TIME) ./source/
	$(GO) test -run '^$$' -fuzz '^FuzzNormalizeHostname$$' -fuzztime $(FUZZ_TIME) ./endpoint/
	$(GO) test -run '^$$' -fuzz '^FuzzNormalizeIP$$' -fuzztime $(FUZZ_TIME) ./endpoint/

unit:
	$(GO) test -count=1 $$($(GO) list ./... | grep -v /test/)

integration: envtest-assets helm
	HELM=$(HELM) KUBEBUILDER_ASSETS=$(ASSETS) $(GO) test -count=1 -timeout $(TEST_TIMEOUT) -v ./test/...

# The whole-system soak (test/soak): two clusters sharing a router, every source kind churned,
# a person editing the router by hand, replicas killed, the router and the kube-apiserver
# restarted, a faulty network; checked against a model during the churn and after it settles.
# The seed is printed first and with every failure; SOAK_SEED=N replays that run. Also:
# SOAK_ROUTER_BIN (the real router-hosts server), SOAK_MUTATION (an operator broken on
# purpose, which must fail), SOAK_RACE=1 (the race detector, which make test's short soak
# always uses; off here so that a long run measures the operator's own memory),
# SOAK_OPERATOR_BIN, SOAK_SETTLE, SOAK_DIR.
SOAK_SEED     ?= random
SOAK_DURATION ?= 60s
SOAK_RACE     ?= 0
soak: envtest-assets
	SOAK_SEED=$(SOAK_SEED) SOAK_DURATION=$(SOAK_DURATION) SOAK_RACE=$(SOAK_RACE) KUBEBUILDER_ASSETS=$(ASSETS) \
	  $(GO) test -count=1 -v -timeout 4h -run '^TestSoak$$' ./test/soak/

# The operator's main job on this machine: a local control plane, the example Ingresses, the
# router-hosts test server standing in for a router; a dry run, a real sync, the result.
demo: envtest-assets build
	KUBEBUILDER_ASSETS=$(ASSETS) $(GO) run ./hack/demo -operator $(BIN) -examples examples

# The scale run: the plan benchmark, then the operator binary against a real kube-apiserver
# and the test server at 1,000, 5,000 and 10,000 Ingresses, 1,000 HostMappings and the mixed
# run, printed as one table against the budgets in docs/performance.md (about 20 minutes). BENCH_FLAGS=-server=real measures a real
# router-hosts server from the ROUTER_HOSTS_OPERATOR_* variables instead.
BENCH_FLAGS   ?=
bench: envtest-assets build
	KUBEBUILDER_ASSETS=$(ASSETS) $(GO) run ./hack/bench -operator $(BIN) $(BENCH_FLAGS)

lint:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	  if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
	$(GO) mod tidy -diff
	# The external-dns tests' module: -e because tidy also loads the tests of external-dns's
	# packages, whose helpers need a module version the proxy does not serve.
	cd $(EXTERNAL_DNS_TESTS) && $(GO) vet ./... && GOFLAGS=-mod=mod $(GO) mod tidy -e -diff

# Regenerates the committed gRPC stubs (needs protoc, protoc-gen-go, protoc-gen-go-grpc).
generate:
	protoc -I proto --go_out=api/routerhostsv1 --go_opt=paths=source_relative \
	  --go-grpc_out=api/routerhostsv1 --go-grpc_opt=paths=source_relative router_hosts/v1/hosts.proto
	mv api/routerhostsv1/router_hosts/v1/*.go api/routerhostsv1/ && rm -r api/routerhostsv1/router_hosts

# Builds the container image (needs a Docker engine; none runs on the CI machines).
image:
	docker build --build-arg VERSION=$(VERSION) -t $(IMAGE):$(VERSION) .

clean:
	rm -rf bin
