#!/usr/bin/env bash
# Builds the control-plane binaries Parley's tests and local cluster need, from the Go module
# proxy (no binary downloads are possible here), into a versioned cache outside the clone, and
# links them into bin/. A fresh clone on a machine that built them once reuses the cache.
#
#   hack/build-binaries.sh envtest   # etcd + kube-apiserver (envtest tier)
#   hack/build-binaries.sh cluster   # + kube-scheduler, kube-controller-manager, kubelet, kwok
#   hack/build-binaries.sh s3        # versitygw (S3-compatible server for storage tests)
#
# KUBEBUILDER_ASSETS, when set to a folder holding etcd and kube-apiserver, is honoured by the
# Makefile instead of calling this script.
set -euo pipefail

KUBE_VERSION=${KUBE_VERSION:-v1.36.3}
ETCD_VERSION=${ETCD_VERSION:-v3.6.6}
KWOK_VERSION=${KWOK_VERSION:-v0.8.0}
VERSITYGW_VERSION=${VERSITYGW_VERSION:-v1.8.0}

root=$(cd "$(dirname "$0")/.." && pwd)
cache=${PARLEY_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/parley}
arch=$(go env GOOS)-$(go env GOARCH)
export GOFLAGS=-mod=mod
# The scratch modules must not inherit the project's workspace or module settings.
export GOWORK=off

mkdir -p "$cache"
# One build at a time: concurrent runs would share the scratch modules.
exec 9>"$cache/.build.lock"
flock 9

log() { printf '[build-binaries] %s\n' "$*" >&2; }

# scratch DIR: a fresh scratch module folder.
scratch() {
  local dir=$1
  mkdir -p "$dir"
  cd "$dir"
  [ -f go.mod ] || go mod init parley.dev/scratch >/dev/null 2>&1
}

# kube_module DIR: a scratch module that requires k8s.io/kubernetes with its staging replaces
# pointed at the published staging modules.
kube_module() {
  local dir=$1 gomod
  scratch "$dir"
  if ! grep -q 'k8s.io/kubernetes' go.mod; then
    gomod=$(go mod download -json "k8s.io/kubernetes@${KUBE_VERSION}" | sed -n 's/.*"GoMod": "\(.*\)".*/\1/p')
    local staging=${KUBE_VERSION/#v1./v0.}
    {
      echo "require k8s.io/kubernetes ${KUBE_VERSION}"
      grep -E '=> \./staging/src/' "$gomod" | awk -v v="$staging" '{print "replace " $1 " => " $1 " " v}'
    } >>go.mod
  fi
}

# build_kube NAME...: build Kubernetes commands into the cache.
build_kube() {
  local out=$cache/kubernetes-${KUBE_VERSION}-${arch} missing=() name
  for name in "$@"; do [ -x "$out/$name" ] || missing+=("$name"); done
  [ ${#missing[@]} -eq 0 ] && return 0
  log "building ${missing[*]} ${KUBE_VERSION} (cold: several minutes each on 2 cores)"
  kube_module "$cache/src/kubernetes-${KUBE_VERSION}"
  {
    echo '//go:build tools'
    echo 'package tools'
    echo 'import ('
    for name in kube-apiserver kube-scheduler kube-controller-manager kubelet; do
      echo "	_ \"k8s.io/kubernetes/cmd/$name\""
    done
    echo ')'
  } >tools.go
  go mod tidy >/dev/null
  mkdir -p "$out"
  local minor=${KUBE_VERSION#v1.}
  minor=${minor%%.*}
  local ldflags="-s -w -X k8s.io/component-base/version.gitVersion=${KUBE_VERSION} -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=${minor}"
  for name in "${missing[@]}"; do
    log "go build $name"
    CGO_ENABLED=0 go build -ldflags "$ldflags" -o "$out/$name.tmp" "k8s.io/kubernetes/cmd/$name"
    mv "$out/$name.tmp" "$out/$name"
  done
}

# build_module NAME MODULE VERSION PACKAGE: go build one command of a module into
# $cache/NAME-VERSION-ARCH/NAME, in a scratch module of its own.
build_module() {
  local name=$1 module=$2 version=$3 package=$4
  local out=$cache/${name}-${version}-${arch}
  [ -x "$out/$name" ] && return 0
  log "building $name $version"
  scratch "$cache/src/${name}-${version}"
  printf '//go:build tools\npackage tools\nimport _ "%s"\n' "$package" >tools.go
  go get "${module}@${version}" >/dev/null 2>&1
  go mod tidy >/dev/null
  mkdir -p "$out"
  CGO_ENABLED=0 go build -ldflags "-s -w" -o "$out/$name.tmp" "$package"
  mv "$out/$name.tmp" "$out/$name"
}

build_etcd() {
  build_module etcd go.etcd.io/etcd/server/v3 "$ETCD_VERSION" go.etcd.io/etcd/server/v3
}

build_kwok() {
  local out=$cache/kwok-${KWOK_VERSION}-${arch}
  [ -x "$out/kwok" ] && [ -d "$out/stages" ] && return 0
  build_module kwok sigs.k8s.io/kwok "$KWOK_VERSION" sigs.k8s.io/kwok/cmd/kwok
  # kwok refuses to start without stages: ship the "fast" node and pod stages of the module.
  # The stage YAMLs only, not the kustomization.yaml files (one per folder, same name).
  local dir f
  dir=$(cd "$cache/src/kwok-${KWOK_VERSION}" && go list -m -f '{{.Dir}}' sigs.k8s.io/kwok)
  mkdir -p "$out/stages"
  for f in "$dir"/kustomize/stage/node/fast/*.yaml "$dir"/kustomize/stage/pod/fast/*.yaml; do
    [ "$(basename "$f")" = kustomization.yaml ] || cp -f "$f" "$out/stages/"
  done
  chmod u+w "$out"/stages/*.yaml
}

build_versitygw() {
  build_module versitygw github.com/versity/versitygw "$VERSITYGW_VERSION" github.com/versity/versitygw/cmd/versitygw
}

# link_into DEST FILE...: symlink cached binaries into a bin/ folder of the clone.
link_into() {
  local dest=$1
  shift
  mkdir -p "$dest"
  for f in "$@"; do ln -sf "$f" "$dest/$(basename "$f")"; done
}

what=${1:-envtest}
case $what in
envtest)
  (build_etcd)
  (build_kube kube-apiserver)
  link_into "$root/bin/k8s/envtest" "$cache/etcd-${ETCD_VERSION}-${arch}/etcd" \
    "$cache/kubernetes-${KUBE_VERSION}-${arch}/kube-apiserver"
  echo "$root/bin/k8s/envtest"
  ;;
cluster)
  (build_etcd)
  (build_kube kube-apiserver kube-controller-manager kube-scheduler kubelet)
  (build_kwok)
  k=$cache/kubernetes-${KUBE_VERSION}-${arch}
  link_into "$root/bin/k8s/cluster" "$cache/etcd-${ETCD_VERSION}-${arch}/etcd" \
    "$k/kube-apiserver" "$k/kube-controller-manager" "$k/kube-scheduler" "$k/kubelet" \
    "$cache/kwok-${KWOK_VERSION}-${arch}/kwok"
  link_into "$root/bin/k8s/cluster/kwok-stages" "$cache/kwok-${KWOK_VERSION}-${arch}"/stages/*.yaml
  echo "$root/bin/k8s/cluster"
  ;;
s3)
  (build_versitygw)
  link_into "$root/bin/s3" "$cache/versitygw-${VERSITYGW_VERSION}-${arch}/versitygw"
  echo "$root/bin/s3"
  ;;
*)
  echo "usage: $0 envtest|cluster|s3" >&2
  exit 2
  ;;
esac
