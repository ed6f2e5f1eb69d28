#!/usr/bin/env bash
# go-install-tool.sh BIN_DIR NAME PACKAGE VERSION
# Installs a Go tool at a pinned version into a cache outside the clone (so a fresh clone on the
# same machine does not rebuild it), and links it into BIN_DIR as NAME-VERSION and NAME.
set -euo pipefail
bin_dir=$1 name=$2 package=$3 version=$4
cache=${PARLEY_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/parley}/tools/${name}-${version}
if [ ! -x "$cache/$name" ]; then
  echo "[go-install-tool] building $package@$version" >&2
  mkdir -p "$cache"
  GOBIN=$cache GOWORK=off GOFLAGS=-mod=mod go install "$package@$version"
  # go install names the binary after the package's last path element.
  built=$(basename "${package%/v[0-9]*}")
  [ "$built" = "$name" ] || mv "$cache/$(basename "$package")" "$cache/$name" 2>/dev/null || true
fi
mkdir -p "$bin_dir"
ln -sf "$cache/$name" "$bin_dir/$name-$version"
ln -sf "$cache/$name" "$bin_dir/$name"
