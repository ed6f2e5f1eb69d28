#!/usr/bin/env bash
# claude-code.sh BIN_DIR VERSION...
# Installs the real Claude Code CLI (the npm package @anthropic-ai/claude-code, whose native
# binary ships inside the registry package @anthropic-ai/claude-code-<platform>) at each
# pinned VERSION into a cache outside the clone, once, and links it into
# BIN_DIR/<VERSION>/claude. The resume-bundle test (internal/bundle) runs every version found
# there against a local stub of the Messages API.
#
# When a version cannot be installed (no npm, no registry), the reason is written to
# BIN_DIR/<VERSION>/UNAVAILABLE and the script exits 0: the test then skips with that
# reason, except under CI=true, where it fails.
set -euo pipefail
bin_dir=$1
shift
# shellcheck source=hack/lib/npm-native.sh
. "$(dirname "$0")/lib/npm-native.sh"
log() { printf '[claude-code] %s\n' "$*" >&2; }

# install VERSION: the binary at $cache/claude-code-VERSION/claude, or a reason on stderr.
install() {
  local version=$1 out=$cache/claude-code-$1 plat tmp
  [ -x "$out/claude" ] && return 0
  command -v npm >/dev/null || { echo "npm is not installed"; return 1; }
  plat=$(platform) || { echo "no Claude Code build for $(uname -s) $(uname -m)"; return 1; }
  tmp=$(mktemp -d "$cache/.claude-code-$version.XXXXXX")
  log "npm install @anthropic-ai/claude-code@$version ($plat; ~250-400 MB, once)"
  # --ignore-scripts: the postinstall only copies the platform binary into place; we take it
  # from the platform package ourselves, and run no downloaded script.
  if ! npm install --prefix "$tmp" --no-audit --no-fund --ignore-scripts --loglevel=error \
    "@anthropic-ai/claude-code@$version" >"$tmp/npm.log" 2>&1; then
    echo "npm install @anthropic-ai/claude-code@$version failed: $(tail -n 3 "$tmp/npm.log" | tr '\n' ' ')"
    rm -rf "$tmp"
    return 1
  fi
  local bin=$tmp/node_modules/@anthropic-ai/claude-code-$plat/claude
  if [ ! -x "$bin" ]; then
    echo "the package installed no binary for $plat"
    rm -rf "$tmp"
    return 1
  fi
  local got
  got=$("$bin" --version 2>/dev/null | awk '{print $1}') || true
  if [ "$got" != "$version" ]; then
    echo "installed binary says version '$got', not $version"
    rm -rf "$tmp"
    return 1
  fi
  mkdir -p "$out"
  mv "$bin" "$out/claude.tmp"
  mv "$out/claude.tmp" "$out/claude"
  rm -rf "$tmp"
}

mkdir -p "$cache" "$bin_dir"
exec 9>"$cache/.claude-code.lock"
flock 9
# BIN_DIR holds exactly the versions asked for: the test runs every one it finds there.
for dir in "$bin_dir"/*/; do
  [ -d "$dir" ] || continue
  keep=0
  for version in "$@"; do [ "$(basename "$dir")" = "$version" ] && keep=1; done
  [ "$keep" = 1 ] || rm -rf "$dir"
done
for version in "$@"; do
  dest=$bin_dir/$version
  mkdir -p "$dest"
  rm -f "$dest/UNAVAILABLE"
  if reason=$(install "$version"); then
    ln -sf "$cache/claude-code-$version/claude" "$dest/claude"
  else
    log "Claude Code $version unavailable: $reason"
    rm -f "$dest/claude"
    printf '%s\n' "$reason" >"$dest/UNAVAILABLE"
  fi
done
echo "$bin_dir"
