# Parley — a Kubernetes operator for AI-agent conversation sessions.
# Run `make help` for the targets. The two a newcomer needs: `make run-local` and `make test`.

# Image URL to use all building/pushing image targets. The committed dist/install.yaml names
# DEFAULT_IMG (make verify renders it with that); `make build-installer IMG=...` for your registry.
DEFAULT_IMG := parley-manager:dev
IMG ?= $(DEFAULT_IMG)

SHELL = /usr/bin/env bash -o pipefail
.SHELLFLAGS = -ec

LOCALBIN ?= $(shell pwd)/bin
GO ?= go

## Tool versions (built from the Go module proxy into a cache outside the clone, linked into bin/)
CONTROLLER_TOOLS_VERSION ?= v0.23.0
GOLANGCI_LINT_VERSION ?= v2.15.0
GREMLINS_VERSION ?= v0.6.0
KUSTOMIZE_VERSION ?= v5.8.1
HELM_VERSION ?= v3.22.0
CONTROLLER_GEN ?= $(LOCALBIN)/controller-gen
KUSTOMIZE ?= $(LOCALBIN)/kustomize
GOLANGCI_LINT ?= $(LOCALBIN)/golangci-lint
GREMLINS ?= $(LOCALBIN)/gremlins
HELM ?= $(LOCALBIN)/helm

## Test assets. KUBEBUILDER_ASSETS, when you set it, wins over the binaries we build.
ENVTEST_ASSETS ?= $(or $(KUBEBUILDER_ASSETS),$(LOCALBIN)/k8s/envtest)
VERSITYGW ?= $(LOCALBIN)/s3/versitygw
## The real Claude Code CLI releases the resume-bundle test runs (npm package
## @anthropic-ai/claude-code): the newest 2.1.x and an older one users still run.
CLAUDE_CODE_VERSIONS ?= 2.1.330 2.1.197
CLAUDE_CODE ?= $(LOCALBIN)/claude-code
## The Claude Agent SDK the session store (clients/claude-agent-sdk-session-store) is built and
## tested with, with the build-time packages that compile it.
CLAUDE_AGENT_SDK_VERSION ?= 0.3.330
CLAUDE_AGENT_SDK_BUILD ?= typescript@7.0.2 @types/node@20.19.43
CLAUDE_AGENT_SDK ?= $(LOCALBIN)/claude-agent-sdk
## The agent frameworks the TypeScript Session API client and its adapters (clients/) are
## built and tested with: the OpenAI Agents SDK, LangGraph and its checkpoint conformance suite.
AGENT_FRAMEWORKS_PACKAGES ?= $(CLAUDE_AGENT_SDK_BUILD) @openai/agents@0.20.0 zod@4.6.7 @langchain/core@1.4.0 \
	@langchain/langgraph@1.7.3 @langchain/langgraph-checkpoint@1.2.2 @langchain/langgraph-checkpoint-validation@1.1.1
AGENT_FRAMEWORKS ?= $(LOCALBIN)/agent-frameworks
## Build information linked into the binaries (manager --version, kubectl parley version).
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
COMMIT ?= $(shell git rev-parse HEAD 2>/dev/null)
BUILD_DATE ?= $(shell git log -1 --format=%cI 2>/dev/null)
VERSION_PKG := github.com/parley-dev/parley/internal/version
LDFLAGS ?= -X $(VERSION_PKG).Version=$(VERSION) -X $(VERSION_PKG).Commit=$(COMMIT) -X $(VERSION_PKG).Date=$(BUILD_DATE)
FUZZTIME ?= 10s
BENCHTIME ?= 1s

.PHONY: all
all: build

##@ General

.PHONY: help
help: ## Display this help.
	@awk 'BEGIN {FS = ":.*##"; printf "\nUsage:\n  make \033[36m<target>\033[0m\n"} /^[a-zA-Z_0-9-]+:.*?##/ { printf "  \033[36m%-18s\033[0m %s\n", $$1, $$2 } /^##@/ { printf "\n\033[1m%s\033[0m\n", substr($$0, 5) } ' $(MAKEFILE_LIST)

##@ Development

.PHONY: manifests
manifests: controller-gen ## Generate CRDs and RBAC from the API types and kubebuilder markers.
	$(CONTROLLER_GEN) rbac:roleName=manager-role crd:generateEmbeddedObjectMeta=true paths="./api/..." paths="./internal/..." output:crd:artifacts:config=config/crd/bases
	@# The embedded pod template without the Pod's field descriptions: client-side apply's
	@# last-applied annotation holds at most 256 KiB (see tools/slim-crd).
	$(GO) run ./tools/slim-crd -schema spec.agent.template config/crd/bases/parley.dev_conversations.yaml

.PHONY: generate
generate: controller-gen ## Generate DeepCopy methods.
	$(CONTROLLER_GEN) object:headerFile="hack/boilerplate.go.txt" paths="./api/..."

.PHONY: docs
docs: ## Generate the API reference docs/api.md from the Go types.
	$(GO) run ./tools/gen-api-docs > docs/api.md

.PHONY: fmt
fmt: ## Run go fmt.
	$(GO) fmt ./...

.PHONY: vet
vet: ## Run go vet (including the e2e build tag).
	$(GO) vet ./...
	$(GO) vet -tags e2e ./test/...

.PHONY: verify
verify: manifests generate docs kustomize ## Regenerate everything and fail when a generated file changed.
	hack/build-installer.sh $(KUSTOMIZE) $(DEFAULT_IMG) dist/install.yaml
	hack/build-chart.sh $(KUSTOMIZE) dist/install.yaml dist/chart
	$(GO) mod tidy
	@if [ -n "$$(git status --porcelain -- api config dist docs/api.md go.mod go.sum)" ]; then \
		echo "generated files are out of date; run 'make manifests generate docs build-installer chart' and 'go mod tidy', then commit:"; \
		git status --porcelain -- api config dist docs/api.md go.mod go.sum; git --no-pager diff --stat; exit 1; \
	fi

.PHONY: lint
lint: golangci-lint ## Run golangci-lint.
	$(GOLANGCI_LINT) run ./...
	$(GOLANGCI_LINT) run --build-tags e2e ./test/...

.PHONY: lint-fix
lint-fix: golangci-lint ## Run golangci-lint and apply its fixes.
	$(GOLANGCI_LINT) run --fix ./...

##@ Test

.PHONY: test
test: manifests generate fmt vet envtest s3-server claude-code claude-agent-sdk agent-frameworks helm kustomize ## Unit, envtest (real kube-apiserver), storage conformance (real S3 server), Helm chart, real Claude Code CLI, Agent SDK, OpenAI Agents SDK and LangGraph tests.
	KUBEBUILDER_ASSETS="$(ENVTEST_ASSETS)" PARLEY_VERSITYGW="$(VERSITYGW)" PARLEY_CLAUDE_CODE="$(CLAUDE_CODE)" \
		HELM="$(HELM)" KUSTOMIZE="$(KUSTOMIZE)" PARLEY_CLAUDE_AGENT_SDK="$(CLAUDE_AGENT_SDK)" \
		PARLEY_AGENT_FRAMEWORKS="$(AGENT_FRAMEWORKS)" \
		$(GO) test ./... -count=1 -coverprofile cover.out

.PHONY: test-e2e
test-e2e: helm ## End-to-end tests on the local cluster (real control plane and node).
	hack/build-binaries.sh cluster >/dev/null # before the test timeout starts: cold, this takes minutes
	HELM="$(HELM)" $(GO) test -tags e2e ./test/e2e/ -count=1 -v -ginkgo.v -timeout 30m

.PHONY: bench-agent-crash
bench-agent-crash: ## Crash to the resumed agent's first model request, each reference agent (or AGENT_BENCH's, comma-separated) on the local cluster (AGENT_CRASHES, default 10).
	hack/build-binaries.sh cluster >/dev/null
	PARLEY_AGENT_CRASHES=$(or $(AGENT_CRASHES),10) PARLEY_AGENT_BENCH=$(AGENT_BENCH) $(GO) test -tags e2e ./test/e2e/ -count=1 -v -ginkgo.v -ginkgo.label-filter=real-agents-bench -timeout 90m

.PHONY: test-replicas
test-replicas: envtest s3-server ## Two manager replicas (the real binary) on envtest, SIGKILLed in turn during >= 1,000 appends per backend: nothing lost or stored twice (see docs/development.md).
	KUBEBUILDER_ASSETS="$(ENVTEST_ASSETS)" PARLEY_VERSITYGW="$(VERSITYGW)" PARLEY_REPLICAS=1 \
		$(GO) test ./test/replicas -count=1 -v -timeout 10m

.PHONY: test-hostile
test-hostile: envtest s3-server ## The manager binary on envtest and a real S3 server, one history holding a decompression bomb: it stays alive, its peak RSS under half its limit, the other conversations append (see docs/security.md).
	KUBEBUILDER_ASSETS="$(ENVTEST_ASSETS)" PARLEY_VERSITYGW="$(VERSITYGW)" PARLEY_HOSTILE=1 \
		$(GO) test ./test/hostile -count=1 -v -timeout 5m

.PHONY: test-blackbox
test-blackbox: envtest s3-server ## The install attacked as shipped: the manager binary as its ServiceAccount on envtest with dist/install.yaml (CRDs, RBAC, admission policy), through the Session API and the Kubernetes API (see docs/security.md).
	KUBEBUILDER_ASSETS="$(ENVTEST_ASSETS)" PARLEY_VERSITYGW="$(VERSITYGW)" PARLEY_BLACKBOX=1 \
		$(GO) test ./test/blackbox -count=1 -v -timeout 15m

.PHONY: check-run-local
check-run-local: ## Run make run-local from a cold cluster state and fail unless it works on the first try (stops the local cluster).
	hack/check-run-local.sh

.PHONY: fuzz
fuzz: ## Run every fuzz target for FUZZTIME each.
	hack/fuzz.sh $(FUZZTIME)

.PHONY: bench
bench: envtest s3-server ## Run the benchmarks on one core (see docs/benchmarks.md).
	KUBEBUILDER_ASSETS="$(ENVTEST_ASSETS)" PARLEY_VERSITYGW="$(VERSITYGW)" \
		$(GO) test ./... -run '^$$' -bench . -benchmem -cpu 1 -benchtime $(BENCHTIME) -timeout 60m

.PHONY: mutate
mutate: gremlins ## Mutation testing of the engine, lifecycle and pkg/conversation (slow; see docs/testing.md).
	GREMLINS=$(GREMLINS) hack/mutate.sh $(MUTATE_DIRS)

HISTORY_BENCH_COUNT ?= 3
.PHONY: bench-history
bench-history: envtest s3-server ## Run only the pkg/history benchmarks (see docs/benchmarks.md, section pkg/history).
	KUBEBUILDER_ASSETS="$(ENVTEST_ASSETS)" PARLEY_VERSITYGW="$(VERSITYGW)" \
		$(GO) test ./pkg/history/bench -run '^$$' -bench . -benchmem -cpu 1 -benchtime $(BENCHTIME) -count $(HISTORY_BENCH_COUNT) -timeout 60m

APPENDS_PHASE ?= 3s
APPENDS_ROUNDS ?= 3
.PHONY: bench-appends
bench-appends: envtest s3-server ## Appends/s of 1 KiB messages through the store and through the Session API, beside raw conditional writes in the same run (APPENDS_PHASE, APPENDS_ROUNDS; see docs/benchmarks.md).
	KUBEBUILDER_ASSETS="$(ENVTEST_ASSETS)" PARLEY_VERSITYGW="$(VERSITYGW)" \
		$(GO) test ./pkg/history/bench -run '^$$' -bench Conversations -benchtime 1x -timeout 30m -v \
		-args -phase $(APPENDS_PHASE) -rounds $(APPENDS_ROUNDS)
	KUBEBUILDER_ASSETS="$(ENVTEST_ASSETS)" PARLEY_VERSITYGW="$(VERSITYGW)" \
		$(GO) test ./internal/sessionapi/apibench -run '^$$' -bench SessionAPI -benchtime 1x -timeout 60m -v \
		-args -phase $(APPENDS_PHASE) -rounds $(APPENDS_ROUNDS) -conversation-rate 100000

.PHONY: bench-session-api-paths
bench-session-api-paths: envtest s3-server ## Appends/s and p50/p99 by the Session API's two paths, direct (agent token) and through the API server (API aggregation), alternating (APPENDS_PHASE, APPENDS_ROUNDS; see docs/benchmarks.md).
	KUBEBUILDER_ASSETS="$(ENVTEST_ASSETS)" PARLEY_VERSITYGW="$(VERSITYGW)" \
		$(GO) test ./internal/sessionapi/apibench -run '^$$' -bench APIPaths -benchtime 1x -timeout 30m -v \
		-args -phase $(APPENDS_PHASE) -rounds $(APPENDS_ROUNDS) -conversation-rate 100000

.PHONY: bench-scale
bench-scale: envtest ## The scale benchmark: 10,000 Conversations on envtest against the real manager (PARLEY_SCALE_* knobs: test/scale/scale_test.go; figures: docs/benchmarks.md).
	KUBEBUILDER_ASSETS="$(ENVTEST_ASSETS)" PARLEY_SCALE=1 \
		$(GO) test ./test/scale -run '^$$' -bench Conversations10k -benchtime 1x -timeout 60m -v

CRASH_BENCH_CRASHES ?= 200
.PHONY: bench-crash
bench-crash: envtest ## Agent crash-to-new-pod latency on envtest over CRASH_BENCH_CRASHES crashes (see docs/benchmarks.md).
	KUBEBUILDER_ASSETS="$(ENVTEST_ASSETS)" \
		$(GO) test ./internal/controller/crashbench -run '^$$' -bench CrashToNewPod -benchtime $(CRASH_BENCH_CRASHES)x -v -timeout 30m

WAKE_BENCH_WAKES ?= 100
.PHONY: bench-wake
bench-wake: envtest ## Idle agent woken by a message: append acknowledged to new pod on envtest over WAKE_BENCH_WAKES wakes (see docs/benchmarks.md).
	KUBEBUILDER_ASSETS="$(ENVTEST_ASSETS)" \
		$(GO) test ./internal/controller/wakebench -run '^$$' -bench Wake -benchtime $(WAKE_BENCH_WAKES)x -v -timeout 30m

.PHONY: bench-wake-scale
bench-wake-scale: envtest ## 1,000 Conversations with sleeping agents against the manager process on envtest, 100 woken at once (PARLEY_SCALE_ASLEEP, PARLEY_SCALE_WAKE; see docs/benchmarks.md).
	KUBEBUILDER_ASSETS="$(ENVTEST_ASSETS)" PARLEY_SCALE=1 \
		$(GO) test ./test/scale -run '^$$' -bench WakeAtOnce -benchtime 1x -timeout 30m -v

NODE_WAKES ?= 20
.PHONY: bench-wake-node
bench-wake-node: ## Idle agent woken by a message on the local cluster's real node: the message acknowledged to the woken agent's answer, over NODE_WAKES wakes (see docs/benchmarks.md).
	hack/build-binaries.sh cluster >/dev/null
	PARLEY_NODE_WAKES=$(NODE_WAKES) $(GO) test -tags e2e ./test/e2e/ -count=1 -v -ginkgo.v -ginkgo.label-filter=idle-bench -timeout 30m

##@ Build

.PHONY: build
build: manifests generate fmt vet ## Build the manager binary and the kubectl plugin (bin/kubectl-parley).
	$(GO) build -ldflags "$(LDFLAGS)" -o bin/manager ./cmd/manager
	$(GO) build -ldflags "$(LDFLAGS)" -o bin/kubectl-parley ./cmd/kubectl-parley

.PHONY: run
run: manifests generate fmt vet ## Run the manager from your host against the current kubeconfig.
	$(GO) run ./cmd/manager

.PHONY: run-local
run-local: ## Bring up a local cluster, install Parley, apply the samples and show them (no cluster needed).
	hack/run-local.sh

.PHONY: demo-claude-code
demo-claude-code: ## After make run-local: a real Claude Code agent (stub model) converses, is SIGKILLed mid-turn and resumes.
	hack/demo-claude-code.sh

.PHONY: images
images: ## Build the manager and test-agent images as tarballs and import them into the local node.
	hack/images.sh

.PHONY: agent-images
agent-images: ## Build the reference agents' images (examples/: node and each framework) and import them into the local node.
	hack/agent-images.sh

.PHONY: build-installer
build-installer: manifests generate kustomize ## Render dist/install.yaml (CRDs, RBAC, manager, Services) for the manager image IMG.
	hack/build-installer.sh $(KUSTOMIZE) $(IMG) dist/install.yaml

.PHONY: chart
chart: build-installer ## Generate the Helm chart dist/chart from config/ (tools/gen-chart; templates render what dist/install.yaml holds).
	hack/build-chart.sh $(KUSTOMIZE) dist/install.yaml dist/chart

##@ Local cluster

.PHONY: cluster-up
cluster-up: ## Start the local cluster (etcd, apiserver, controller-manager, scheduler, a real node).
	hack/local-cluster up

.PHONY: cluster-down
cluster-down: ## Stop every process of the local cluster and remove its network rules.
	hack/local-cluster down

.PHONY: cluster-status
cluster-status: ## Show the local cluster's processes and nodes.
	hack/local-cluster status

##@ Dependencies

.PHONY: envtest
envtest: ## Build etcd and kube-apiserver for envtest (cached outside the clone).
	@if [ -z "$(KUBEBUILDER_ASSETS)" ]; then hack/build-binaries.sh envtest >/dev/null; fi

.PHONY: cluster-binaries
cluster-binaries: ## Build every control-plane and node binary for the local cluster.
	hack/build-binaries.sh cluster >/dev/null

.PHONY: s3-server
s3-server: ## Build versitygw, the S3-compatible server of the storage tests.
	hack/build-binaries.sh s3 >/dev/null

.PHONY: claude-code
claude-code: ## Install the Claude Code CLI releases of CLAUDE_CODE_VERSIONS with npm (cached outside the clone).
	@hack/claude-code.sh $(CLAUDE_CODE) $(CLAUDE_CODE_VERSIONS) >/dev/null

.PHONY: claude-agent-sdk
claude-agent-sdk: ## Install the Claude Agent SDK and TypeScript with npm (cached outside the clone).
	@hack/claude-agent-sdk.sh $(CLAUDE_AGENT_SDK) $(CLAUDE_AGENT_SDK_VERSION) $(CLAUDE_AGENT_SDK_BUILD) >/dev/null

.PHONY: agent-frameworks
agent-frameworks: ## Install the OpenAI Agents SDK, LangGraph and TypeScript with npm (cached outside the clone).
	@hack/agent-frameworks.sh $(AGENT_FRAMEWORKS) $(AGENT_FRAMEWORKS_PACKAGES) >/dev/null

.PHONY: agent-clients
agent-clients: agent-frameworks claude-agent-sdk ## Compile the TypeScript Session API client and the agent framework adapters (clients/) into their committed dist/.
	hack/agent-clients.sh $(AGENT_FRAMEWORKS) clients $(CLAUDE_AGENT_SDK)

.PHONY: controller-gen
controller-gen: ## Build controller-gen.
	@hack/go-install-tool.sh $(LOCALBIN) controller-gen sigs.k8s.io/controller-tools/cmd/controller-gen $(CONTROLLER_TOOLS_VERSION)

.PHONY: kustomize
kustomize: ## Build kustomize (renders config/ for build-installer).
	@hack/go-install-tool.sh $(LOCALBIN) kustomize sigs.k8s.io/kustomize/kustomize/v5 $(KUSTOMIZE_VERSION)

.PHONY: helm
helm: ## Build helm (the chart's lint, render and install tests).
	@hack/go-install-tool.sh $(LOCALBIN) helm helm.sh/helm/v3/cmd/helm $(HELM_VERSION)

.PHONY: golangci-lint
golangci-lint: ## Build golangci-lint.
	@hack/go-install-tool.sh $(LOCALBIN) golangci-lint github.com/golangci/golangci-lint/v2/cmd/golangci-lint $(GOLANGCI_LINT_VERSION)

.PHONY: gremlins
gremlins: ## Build gremlins, the mutation testing tool of make mutate.
	@hack/go-install-tool.sh $(LOCALBIN) gremlins github.com/go-gremlins/gremlins/cmd/gremlins $(GREMLINS_VERSION)
