#!/usr/bin/env bash
# agent-images.sh [EXAMPLE...]
# Builds the reference agents' images (examples/<EXAMPLE>) without Docker or a registry and
# imports them into the local cluster's containerd, as localhost/parley-example-<EXAMPLE>:$IMAGE_TAG.
# With no argument, every example.
#
# An image is node and the shared libraries it links (taken from this machine: see
# docs/agents.md, "Agent images"), the example's npm packages, the Parley packages it uses
# (clients/, their committed dist/) and its script; the Claude examples add the Claude Code
# binary. Every piece is cached under ${XDG_CACHE_HOME:-~/.cache}/parley/agent-images by the
# hash of what it is made of, so a second run builds nothing and only re-imports.
#
# Each example's Dockerfile builds the same thing on a machine with Docker.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
# shellcheck source=hack/lib/npm-native.sh
. "$root/hack/lib/npm-native.sh"
# shellcheck source=hack/lib/import-images.sh
. "$root/hack/lib/import-images.sh"
IMAGE_TAG=${IMAGE_TAG:-dev}
CLAUDE_CODE_VERSION=${CLAUDE_CODE_VERSION:-2.1.330}
store=$cache/agent-images
out=$root/bin/images
mkdir -p "$store" "$out"

log() { printf '[agent-images] %s\n' "$*" >&2; }
die() {
  log "error: $*"
  exit 1
}

# pack DIR TAR: a deterministic layer tarball of DIR (sorted, fixed times, owned by root).
pack() {
  chmod 0755 "$1"
  tar --sort=name --mtime=@0 --owner=0 --group=0 --numeric-owner -C "$1" -cf "$2.tmp" .
  mv "$2.tmp" "$2"
}

# copy_libs DIR BINARY: the shared libraries BINARY loads, at their paths, under DIR.
copy_libs() {
  local lib
  for lib in $(ldd "$2" | awk '$2 == "=>" && $3 ~ /^\// {print $3} $1 ~ /^\// {print $1}'); do
    mkdir -p "$1$(dirname "$lib")"
    cp -L "$lib" "$1$lib"
  done
}

# node_layer: prints the base layer (node, its libraries, /tmp, a passwd naming uid 65532).
node_layer() {
  local node key layer tmp
  node=$(command -v node) || die "node is not installed"
  key=$(sha256sum "$node" | cut -c1-12)
  layer=$store/node-$(node --version)-$key.tar
  if [ ! -f "$layer" ]; then
    log "packing $node and its libraries"
    tmp=$(mktemp -d "$store/.node.XXXXXX")
    install -D -m 0755 "$node" "$tmp/usr/bin/node"
    copy_libs "$tmp" "$node"
    mkdir -p "$tmp/etc" "$tmp/tmp"
    chmod 1777 "$tmp/tmp"
    # Programs that look their user up (os.userInfo, the Claude CLI) find the agents' uid.
    printf 'root:x:0:0:root:/root:/sbin/nologin\nagent:x:65532:65532:agent:/tmp:/sbin/nologin\n' >"$tmp/etc/passwd"
    printf 'root:x:0:\nagent:x:65532:\n' >"$tmp/etc/group"
    pack "$tmp" "$layer"
    rm -rf "$tmp"
  fi
  echo "$layer"
}

# claude_layer: prints the layer holding the Claude Code binary at /usr/local/bin/claude.
claude_layer() {
  local bin layer tmp
  bin=$(hack/claude-code.sh "$root/bin/claude-code" "$CLAUDE_CODE_VERSION")/$CLAUDE_CODE_VERSION/claude
  [ -x "$bin" ] || die "no Claude Code $CLAUDE_CODE_VERSION: $(cat "$root/bin/claude-code/$CLAUDE_CODE_VERSION/UNAVAILABLE" 2>/dev/null)"
  layer=$store/claude-code-$CLAUDE_CODE_VERSION.tar
  if [ ! -f "$layer" ]; then
    log "packing Claude Code $CLAUDE_CODE_VERSION"
    tmp=$(mktemp -d "$store/.claude.XXXXXX")
    install -D -m 0755 "$bin" "$tmp/usr/local/bin/claude"
    copy_libs "$tmp" "$bin"
    pack "$tmp" "$layer"
    rm -rf "$tmp"
  fi
  echo "$layer"
}

# registry_deps DIR: the example's npm dependencies that come from the registry (name@version).
registry_deps() {
  node -e '
    const deps = require(process.argv[1] + "/package.json").dependencies ?? {};
    console.log(Object.entries(deps).filter(([, v]) => !v.startsWith("file:")).map(([n, v]) => `${n}@${v}`).sort().join(" "));
  ' "$1"
}

# local_deps DIR: the clients/ folders of the example's Parley packages.
local_deps() {
  node -e '
    const path = require("path");
    const deps = require(process.argv[1] + "/package.json").dependencies ?? {};
    for (const v of Object.values(deps)) if (v.startsWith("file:")) console.log(path.resolve(process.argv[1], v.slice(5)));
  ' "$1"
}

# npm_modules DIR: prints a folder whose node_modules holds the example's registry packages.
npm_modules() {
  local want dir tmp
  want=$(registry_deps "$1")
  dir=$store/npm-$(printf '%s' "$want" | sha256sum | cut -c1-12)
  if [ ! -f "$dir/.packages" ]; then
    command -v npm >/dev/null || die "npm is not installed"
    log "npm install ${want:-(nothing)} (once)"
    tmp=$(mktemp -d "$store/.npm.XXXXXX")
    # --ignore-scripts: no downloaded script runs.
    # shellcheck disable=SC2086
    [ -z "$want" ] || npm install --prefix "$tmp" --no-audit --no-fund --ignore-scripts --loglevel=error $want >"$tmp/npm.log" 2>&1 ||
      die "npm install $want failed: $(tail -n 3 "$tmp/npm.log")"
    mkdir -p "$tmp/node_modules"
    # The Agent SDK's platform package is the Claude Code binary, which the image has once,
    # from its own layer.
    rm -rf "$tmp"/node_modules/@anthropic-ai/claude-agent-sdk-*
    printf '%s' "$want" >"$tmp/.packages"
    rm -rf "$dir"
    mv "$tmp" "$dir"
  fi
  echo "$dir"
}

# app_layer EXAMPLE: prints the layer holding /app: node_modules, the Parley packages, the script.
app_layer() {
  local dir=$root/examples/$1 modules key layer tmp dep name
  modules=$(npm_modules "$dir")
  key=$( (
    cat "$modules/.packages"
    find "$dir" -type f ! -name Dockerfile ! -name '*.yaml' | sort | xargs sha256sum
    for dep in $(local_deps "$dir"); do find "$dep/dist" "$dep/package.json" -type f | sort | xargs sha256sum; done
  ) | sha256sum | cut -c1-12)
  layer=$store/app-$1-$key.tar
  if [ ! -f "$layer" ]; then
    log "packing examples/$1"
    tmp=$(mktemp -d "$store/.app.XXXXXX")
    mkdir -p "$tmp/app"
    cp -a "$modules/node_modules" "$tmp/app/"
    for dep in $(local_deps "$dir"); do
      name=$(node -p "require('$dep/package.json').name")
      mkdir -p "$tmp/app/node_modules/$name"
      cp -a "$dep/package.json" "$dep/dist" "$tmp/app/node_modules/$name/"
    done
    find "$dir" -maxdepth 1 -type f \( -name '*.mjs' -o -name '*.txt' -o -name package.json \) -exec cp {} "$tmp/app/" \;
    pack "$tmp" "$layer"
    rm -rf "$tmp"
  fi
  echo "$layer"
}

# build EXAMPLE: the image tarball bin/images/parley-example-EXAMPLE.tar.
build() {
  local name=$1 ref="localhost/parley-example-$1:$IMAGE_TAG" layers=()
  [ -d "examples/$name" ] || die "no example examples/$name"
  layers+=(-layer "$(node_layer)")
  case $name in claude-*) layers+=(-layer "$(claude_layer)") ;; esac
  layers+=(-layer "$(app_layer "$name")")
  go run ./tools/mkimage -o "$out/parley-example-$name.tar" -name "$ref" "${layers[@]}" \
    -entrypoint /usr/bin/node -entrypoint /app/agent.mjs -workdir /app -user 65532:65532 -env HOME=/tmp
  tarballs+=("$out/parley-example-$name.tar")
  refs+=("$ref")
}

tarballs=()
refs=()
what=("$@")
if [ ${#what[@]} -eq 0 ]; then
  for d in examples/*/; do what+=("$(basename "$d")"); done
fi
mkdir -p "$cache"
exec 9>"$cache/.agent-images.lock"
flock 9
for w in "${what[@]}"; do build "$w"; done

import_images "$root" "make cluster-up, then make agent-images"
