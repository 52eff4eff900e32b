# Everything a developer or CI runs. `make test` and `make demo` work on a fresh machine with Go:
# the control-plane binaries the tests need are built from the Go module proxy on first use.

GO            ?= go
BIN           := bin/router-hosts-operator
# The version is the git tag (v0.1.0, or v0.1.0-3-gabc1234 between tags); the date is the
# commit's, so that two builds of one commit are the same binary.
VERSION       ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
COMMIT        ?= $(shell git rev-parse HEAD 2>/dev/null)
DATE          ?= $(shell TZ=UTC0 git log -1 --format=%cd --date=format-local:%Y-%m-%dT%H:%M:%SZ 2>/dev/null)
LDFLAGS       := -s -w -X main.version=$(VERSION) -X main.commit=$(COMMIT) -X main.date=$(DATE)
K8S_VERSION   ?= v1.37.2
ASSETS        := $(CURDIR)/.cache/envtest/$(K8S_VERSION)
# The oldest supported Kubernetes: the CRDs' CEL isIP() compiles in new rules from 1.31.
K8S_FLOOR     ?= v1.31.14
ASSETS_FLOOR  := $(CURDIR)/.cache/envtest/$(K8S_FLOOR)
TEST_TIMEOUT  ?= 20m
IMAGE         ?= ghcr.io/router-hosts-operator/router-hosts-operator
HELM_VERSION  ?= v3.22.0
HELM          := $(CURDIR)/.cache/helm/$(HELM_VERSION)/helm
ACTIONLINT_VERSION ?= v1.7.12
ACTIONLINT    := $(CURDIR)/.cache/actionlint/$(ACTIONLINT_VERSION)/actionlint
# external-dns as a process, for the example's test (v0.22.0's main needs two module versions
# the proxy does not serve; v0.21.0 is what external-dns's chart 1.21 deploys).
EXTERNAL_DNS_VERSION ?= v0.21.0
EXTERNAL_DNS  := $(CURDIR)/.cache/external-dns/$(EXTERNAL_DNS_VERSION)/external-dns
# promtool, for the alerts' unit tests (Prometheus 3.x's module versions are v0.3xx).
PROMETHEUS_VERSION ?= v0.316.0
PROMTOOL      := $(CURDIR)/.cache/promtool/$(PROMETHEUS_VERSION)/promtool
# controller-gen writes the CRDs and DeepCopy from api/v1alpha1; its release for this
# repository's k8s.io/apimachinery minor (v0.37). A build tool only, never in go.mod.
CONTROLLER_TOOLS_VERSION ?= v0.23.0
CONTROLLER_GEN := $(CURDIR)/.cache/controller-gen/$(CONTROLLER_TOOLS_VERSION)/controller-gen
# external-dns's own packages drive the webhook in a module of their own (test/externaldns), so
# that external-dns stays out of the operator's go.mod.
EXTERNAL_DNS_TESTS := test/externaldns
# The GitOps tools' view of the operator's objects: the Argo CD health checks of examples/argocd
# in gopher-lua, Argo CD's Lua, and Flux's kstatus, in a module of their own (test/gitops), so
# that neither library enters the operator's go.mod.
GITOPS_TESTS  := test/gitops

.PHONY: all build cross dist krew-manifest test unit integration soak model demo bench year lint generate generate-crds generate-sources envtest-assets envtest-floor helm actionlint external-dns promtool controller-gen clean fuzz image

all: lint build test

# grpcnotrace leaves out gRPC's x/net/trace (and html/template), which the operator never enables.
build:
	CGO_ENABLED=0 $(GO) build -tags grpcnotrace -trimpath -ldflags "$(LDFLAGS)" -o $(BIN) .

# The image's platforms, cross-compiled (no Docker engine needed), so a break on one shows in CI.
PLATFORMS     := linux/amd64 linux/arm64 linux/arm/v7
cross:
	@for p in $(PLATFORMS); do \
	  os=$${p%%/*}; rest=$${p#*/}; arch=$${rest%%/*}; variant=$${rest#$$arch}; variant=$${variant#/v}; \
	  echo "cross-compiling for $$p"; \
	  GOOS=$$os GOARCH=$$arch GOARM=$$variant CGO_ENABLED=0 $(GO) build -tags grpcnotrace -trimpath -o /dev/null . || exit 1; \
	done

# The release's binaries: linux and darwin, amd64 and arm64, one archive each (the binary, the
# licence and the README), with their SHA-256 sums in dist/checksums.txt.
DIST_PLATFORMS := linux/amd64 linux/arm64 darwin/amd64 darwin/arm64
dist:
	rm -rf dist && mkdir -p dist
	@for p in $(DIST_PLATFORMS); do \
	  os=$${p%/*}; arch=$${p#*/}; d=dist/router-hosts-operator_$(VERSION)_$${os}_$${arch}; \
	  echo "building $$d"; mkdir -p $$d; \
	  GOOS=$$os GOARCH=$$arch CGO_ENABLED=0 $(GO) build -tags grpcnotrace -trimpath -ldflags "$(LDFLAGS)" -o $$d/router-hosts-operator . || exit 1; \
	  cp LICENSE README.md $$d/ && tar -C dist -czf $$d.tar.gz $$(basename $$d) && rm -r $$d || exit 1; \
	done
	cd dist && sha256sum *.tar.gz > checksums.txt

# The krew manifest of the release (dist/router-hosts.yaml), from the archives' sums in
# dist/checksums.txt, after make dist: `kubectl krew install --manifest=dist/router-hosts.yaml`
# installs the binary as the plugin `kubectl router-hosts`. KREW_REPO is the GitHub repository
# the release's archives are downloaded from.
KREW_REPO     ?= router-hosts-operator/router-hosts-operator
krew-manifest:
	$(GO) run ./hack/krew -version $(VERSION) -repo $(KREW_REPO) -platforms "$(DIST_PLATFORMS)" -checksums dist/checksums.txt -o dist/router-hosts.yaml

# Builds kube-apiserver and etcd once (the current release, and the oldest supported one);
# cached under .cache/ afterwards.
envtest-assets: $(ASSETS)/kubectl
$(ASSETS)/kubectl:
	K8S_VERSION=$(K8S_VERSION) ASSETS=$(ASSETS) bash hack/envtest-assets.sh
envtest-floor: $(ASSETS_FLOOR)/kubectl
$(ASSETS_FLOOR)/kubectl:
	K8S_VERSION=$(K8S_FLOOR) ASSETS=$(ASSETS_FLOOR) bash hack/envtest-assets.sh

# Builds helm (for the chart tests and lint) and actionlint (for the workflows) once, from the
# Go module proxy; cached under .cache/.
helm: $(HELM)
$(HELM):
	bash hack/go-tool.sh helm.sh/helm/v3/cmd/helm@$(HELM_VERSION) $(dir $(HELM))
actionlint: $(ACTIONLINT)
$(ACTIONLINT):
	bash hack/go-tool.sh github.com/rhysd/actionlint/cmd/actionlint@$(ACTIONLINT_VERSION) $(dir $(ACTIONLINT))
external-dns: $(EXTERNAL_DNS)
$(EXTERNAL_DNS):
	bash hack/go-tool.sh sigs.k8s.io/external-dns@$(EXTERNAL_DNS_VERSION) $(dir $(EXTERNAL_DNS))
promtool: $(PROMTOOL)
$(PROMTOOL):
	bash hack/go-tool.sh github.com/prometheus/prometheus/cmd/promtool@$(PROMETHEUS_VERSION) $(dir $(PROMTOOL))
controller-gen: $(CONTROLLER_GEN)
$(CONTROLLER_GEN):
	bash hack/go-tool.sh sigs.k8s.io/controller-tools/cmd/controller-gen@$(CONTROLLER_TOOLS_VERSION) $(dir $(CONTROLLER_GEN))
# A real dnsmasq (Debian's dnsmasq-base) for the DNS check's tests: it serves the test server's
# hosts file as a router's dnsmasq does. No Go module builds it, so apt installs it when it is
# missing, as .ci/run installs make.
.PHONY: dnsmasq
dnsmasq:
	@command -v dnsmasq >/dev/null || test -x /usr/sbin/dnsmasq || { apt-get update -qq && apt-get install -y -qq dnsmasq-base; }

# Unit and integration tests; integration tests run a real kube-apiserver and etcd, the chart
# tests the helm built above, and api/v1alpha1's test the controller-gen built above (the
# committed CRDs and DeepCopy must be what it makes of the types). The CRDs' rules and a sync
# run again against the oldest supported apiserver. The external-dns tests drive the webhook
# with external-dns's packages and run the example's containers as processes. The alerts run
# their promtool unit tests. The Traefik rule scanner is also fuzzed briefly (`make fuzz` runs
# it for longer). Last, the short soak: a fixed seed and a random one, 30 s of churn each, the
# operator built with the race detector; it runs alone, since it is timed against the
# machine's two cores.
FLOOR_TESTS   := TestCRDRulesOnThisAPIServer|TestCRDRefusesReservedTags|TestTheDesignsRouterHostsConfigIsAcceptedAsWritten|TestOnlyAnnotatedIngressesGetEntriesWithExactTags|TestHostMappingLifecycleAndStatus
test: envtest-assets envtest-floor helm external-dns promtool controller-gen dnsmasq lint cross
	HELM=$(HELM) PROMTOOL=$(PROMTOOL) CONTROLLER_GEN=$(CONTROLLER_GEN) KUBEBUILDER_ASSETS=$(ASSETS) MODEL_SEED=$(MODEL_TEST_SEED) \
	  $(GO) test -count=1 -timeout $(TEST_TIMEOUT) $$($(GO) list ./... | grep -v /test/soak)
	KUBEBUILDER_ASSETS=$(ASSETS_FLOOR) EXPECT_KUBE_MINOR=$(word 1,$(subst ., ,$(K8S_FLOOR:v%=%))).$(word 2,$(subst ., ,$(K8S_FLOOR:v%=%))) \
	  $(GO) test -count=1 -timeout $(TEST_TIMEOUT) -run '^($(FLOOR_TESTS))$$' ./test/integration/
	cd $(EXTERNAL_DNS_TESTS) && HELM=$(HELM) EXTERNAL_DNS=$(EXTERNAL_DNS) KUBEBUILDER_ASSETS=$(ASSETS) $(GO) test -count=1 -timeout $(TEST_TIMEOUT) ./...
	cd $(GITOPS_TESTS) && KUBEBUILDER_ASSETS=$(ASSETS) $(GO) test -count=1 -timeout $(TEST_TIMEOUT) ./...
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

# The packages that need no control plane (cmd/demo runs the whole demo); the envtest assets
# for their kubectl, which the example CI workflow's test runs.
unit: controller-gen helm dnsmasq envtest-assets
	HELM=$(HELM) CONTROLLER_GEN=$(CONTROLLER_GEN) KUBEBUILDER_ASSETS=$(ASSETS) $(GO) test -count=1 $$($(GO) list ./... | grep -v '/test/\(integration\|soak\|model\|externaldns\|gitops\)\|/cmd/demo')

integration: envtest-assets helm promtool dnsmasq
	HELM=$(HELM) PROMTOOL=$(PROMTOOL) KUBEBUILDER_ASSETS=$(ASSETS) $(GO) test -count=1 -timeout $(TEST_TIMEOUT) -v ./test/integration/

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

# The ownership simulation (test/model): every party against the contract's invariants
# (docs/ownership.md, "The contract") on one fake clock, through the real controller, registry,
# planner and provider. MODEL_STEPS party actions (default 100,000); MODEL_SEED=N replays a run
# (each run prints its seed); MODEL_MUTATION=NAME builds the operator with that rule broken on
# purpose (no-consent, free-deletions, cluster-freeze, hashed-uids-as-evidence,
# twin-away-forgotten, compact-foreign), which must fail; the runs it shrank (TestRegressions) play first. Two
# more in registry/mutation_*.go are the registry tests' to catch (go test -tags
# mutation,mutation_<name> ./registry), not the model's (docs/reliability.md). make test runs it at the default on MODEL_TEST_SEED; a new seed
# can still find the open limits docs/reliability.md lists.
MODEL_STEPS    ?= 100000
MODEL_SEED     ?=
MODEL_MUTATION ?=
MODEL_TEST_SEED ?= 1
comma          := ,
model:
	MODEL_STEPS=$(MODEL_STEPS) MODEL_SEED=$(MODEL_SEED) $(GO) test -count=1 -v -timeout 30m \
	  $(if $(MODEL_MUTATION),-tags mutation$(comma)mutation_$(subst -,_,$(MODEL_MUTATION))) -run '^(TestRegressions|TestModel)$$' ./test/model/

# The operator's main job on this machine: a local control plane, the example Ingresses, the
# router-hosts test server standing in for a router; a dry run, a real sync, the result, and
# the router given back as it was found. DEMO_REAL_ROUTER=yes lets it use the router the
# ROUTER_HOSTS_OPERATOR_* variables name (names under home.arpa only); without it, such
# variables make it refuse.
DEMO_REAL_ROUTER ?=
demo: envtest-assets build
	KUBEBUILDER_ASSETS=$(ASSETS) $(GO) run ./cmd/demo -operator $(BIN) -examples examples -real-router=$(if $(filter yes,$(DEMO_REAL_ROUTER)),true,false)

# The scale run: the plan benchmark, then the operator binary against a real kube-apiserver
# and the test server at 1,000, 5,000 and 10,000 Ingresses, 1,000 HostMappings, the mixed run,
# and 1,000 Ingresses and 1,000 HostMappings with a router DNS (dnsmasq) without and with
# --verify-dns; explain and list are timed after each run; printed as one table against the
# budgets in docs/performance.md (about 30 minutes). BENCH_FLAGS=-server=real measures a real
# router-hosts server from the ROUTER_HOSTS_OPERATOR_* variables instead.
BENCH_FLAGS   ?=
bench: envtest-assets build
	KUBEBUILDER_ASSETS=$(ASSETS) $(GO) run ./cmd/bench -operator $(BIN) $(BENCH_FLAGS)

# A year of a homelab's churn, compressed, through the operator onto the real router-hosts server,
# without and with --compact-own-entries: the log's size and each call's cost month by month
# (docs/performance.md, "A year on the real router"; about 15 minutes). The server is the one
# ../shared/real-router/build.sh builds into .cache/real-router from a snapshot of router-hosts;
# the sqlite3 shell reads its log. YEAR_FLAGS=-server=test runs on the test server instead.
REAL_ROUTER   ?= $(CURDIR)/.cache/real-router
YEAR_FLAGS    ?=
year: envtest-assets
	@test -x $(REAL_ROUTER)/router-hosts || case "$(YEAR_FLAGS)" in *-server=test*) ;; *) echo "no router-hosts server in $(REAL_ROUTER): build it as ../shared/real-router/README.md says, or set REAL_ROUTER" >&2; exit 2;; esac
	KUBEBUILDER_ASSETS=$(ASSETS) $(GO) run ./cmd/year -router-hosts $(REAL_ROUTER)/router-hosts $(YEAR_FLAGS)

# Go hygiene, the chart (helm lint --strict), the GitHub workflows and examples/ci's (actionlint),
# and the check that the release's version agrees everywhere (hack/check-versions.sh).
lint: helm actionlint
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	  if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
	$(GO) mod tidy -diff
	# The external-dns tests' module: -e because tidy also loads the tests of external-dns's
	# packages, whose helpers need a module version the proxy does not serve.
	cd $(EXTERNAL_DNS_TESTS) && $(GO) vet ./... && GOFLAGS=-mod=mod $(GO) mod tidy -e -diff
	cd $(GITOPS_TESTS) && $(GO) vet ./... && $(GO) mod tidy -diff
	$(HELM) lint --strict charts/router-hosts-operator
	$(ACTIONLINT) -no-color
	# The example workflow for GitOps repositories, which lives outside .github/workflows.
	$(ACTIONLINT) -no-color examples/ci/router-hosts-plan.yaml
	bash hack/check-versions.sh

# Regenerates the CRDs and DeepCopy from api/v1alpha1 (generate-crds, which needs only Go), what
# the chart and kustomize know of the sources from source/kinds.go (generate-sources: the chart's
# table of sources and its schema's list, and kustomize/rbac.yaml rendered from the chart), the
# flag table of docs/configuration.md from the operator's flags, and the committed gRPC stubs
# (needs protoc, protoc-gen-go, protoc-gen-go-grpc).
generate: generate-crds generate-sources
	$(GO) run ./hack/flagdoc -w
	protoc -I proto --go_out=api/routerhostsv1 --go_opt=paths=source_relative \
	  --go-grpc_out=api/routerhostsv1 --go-grpc_opt=paths=source_relative router_hosts/v1/hosts.proto
	mv api/routerhostsv1/router_hosts/v1/*.go api/routerhostsv1/ && rm -r api/routerhostsv1/router_hosts
generate-crds: $(CONTROLLER_GEN)
	CONTROLLER_GEN=$(CONTROLLER_GEN) bash hack/generate-crds.sh .
generate-sources: $(HELM)
	$(GO) run ./hack/sourcegen -w -helm $(HELM)

# Builds the container image (needs a Docker engine; none runs on the CI machines).
image:
	docker build --build-arg VERSION=$(VERSION) --build-arg COMMIT=$(COMMIT) --build-arg DATE=$(DATE) -t $(IMAGE):$(VERSION) .

clean:
	rm -rf bin
