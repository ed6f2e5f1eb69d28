#!/usr/bin/env bash
# Builds Parley's images without Docker or a registry and imports them into the local cluster's
# containerd (hack/local-cluster). Each image is one static Go binary packed by tools/mkimage into
# a docker-save tarball (kept in bin/images/); pods use them with imagePullPolicy: Never.
#
#   hack/images.sh                 # manager and test agent
#   hack/images.sh agent           # only localhost/parley-test-agent:$IMAGE_TAG
#   hack/images.sh manager         # only localhost/parley-manager:$IMAGE_TAG
#
# When the local cluster is not running, the tarballs are built and the import is skipped.
# The Dockerfile remains the way to build images for real registries.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
IMAGE_TAG=${IMAGE_TAG:-dev}
out=$root/bin/images
mkdir -p "$out"

log() { printf '[images] %s\n' "$*" >&2; }
# shellcheck source=hack/lib/import-images.sh
. "$root/hack/lib/import-images.sh"

# build NAME PACKAGE DEST [CMD...]: build PACKAGE statically and pack it as localhost/NAME.
build() {
  local name=$1 pkg=$2 dest=$3
  shift 3
  local ref="localhost/$name:$IMAGE_TAG" cmdargs=() a
  for a in "$@"; do cmdargs+=(-cmd "$a"); done
  log "building $ref from $pkg"
  CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o "$out/$name" "$pkg"
  go run ./tools/mkimage -o "$out/$name.tar" -name "$ref" -file "$out/$name=$dest" \
    -entrypoint "$dest" -user 65532:65532 "${cmdargs[@]}"
  tarballs+=("$out/$name.tar")
  refs+=("$ref")
}

tarballs=()
refs=()
what=("$@")
[ ${#what[@]} -gt 0 ] || what=(manager agent)
for w in "${what[@]}"; do
  case $w in
  manager) build parley-manager ./cmd/manager /manager ;;
  agent) build parley-test-agent ./test/agent /test-agent serve ;;
  *)
    echo "usage: $0 [manager] [agent]" >&2
    exit 2
    ;;
  esac
done

import_images "$root" "make cluster-up, then make images"
