#!/usr/bin/env bash
# claude-agent-sdk.sh LINK SDK_VERSION PACKAGE...
# Installs the Claude Agent SDK (npm package @anthropic-ai/claude-agent-sdk at SDK_VERSION; its
# native `claude` binary ships inside the registry package
# @anthropic-ai/claude-agent-sdk-<platform>) and the build-time PACKAGEs (typescript, @types/node)
# into a cache outside the clone, once, and links LINK to that folder (it holds node_modules/).
# hack/agent-clients.sh compiles clients/claude-agent-sdk-session-store against it, and the
# session store test (test/clients) runs the real SDK against a live Session API.
#
# When it cannot be installed (no node or npm, no registry), the reason is written to
# LINK.UNAVAILABLE and the script exits 0: the test then skips with that reason, except under
# CI=true, where it fails.
set -euo pipefail
link=$1 version=$2
shift 2
# shellcheck source=hack/lib/npm-native.sh
. "$(dirname "$0")/lib/npm-native.sh"
out=$cache/claude-agent-sdk-$version
log() { printf '[claude-agent-sdk] %s\n' "$*" >&2; }

# install: the packages in $out/node_modules, or a reason on stderr.
install() {
  local want="@anthropic-ai/claude-agent-sdk@$version $*" plat tmp got
  [ -f "$out/.packages" ] && [ "$(cat "$out/.packages")" = "$want" ] && return 0
  command -v node >/dev/null || { echo "node is not installed"; return 1; }
  command -v npm >/dev/null || { echo "npm is not installed"; return 1; }
  plat=$(platform) || { echo "no Claude Agent SDK build for $(uname -s) $(uname -m)"; return 1; }
  tmp=$(mktemp -d "$cache/.claude-agent-sdk-$version.XXXXXX")
  log "npm install $want ($plat; ~450 MB, once)"
  # --ignore-scripts: no downloaded script runs; the SDK finds its binary in the platform
  # package, which npm installs as an optional dependency.
  # shellcheck disable=SC2086
  if ! npm install --prefix "$tmp" --no-audit --no-fund --ignore-scripts --loglevel=error $want >"$tmp/npm.log" 2>&1; then
    echo "npm install $want failed: $(tail -n 3 "$tmp/npm.log" | tr '\n' ' ')"
    rm -rf "$tmp"
    return 1
  fi
  got=$(node -p "require('$tmp/node_modules/@anthropic-ai/claude-agent-sdk/package.json').version" 2>/dev/null) || true
  if [ "$got" != "$version" ] || [ ! -x "$tmp/node_modules/@anthropic-ai/claude-agent-sdk-$plat/claude" ]; then
    echo "the install holds SDK version '$got' and no binary for $plat"
    rm -rf "$tmp"
    return 1
  fi
  printf '%s' "$want" >"$tmp/.packages"
  rm -rf "$out"
  mv "$tmp" "$out"
}

mkdir -p "$cache" "$(dirname "$link")"
exec 9>"$cache/.claude-agent-sdk.lock"
flock 9
rm -f "$link.UNAVAILABLE"
if reason=$(install "$@"); then
  ln -sfn "$out" "$link"
else
  log "Claude Agent SDK $version unavailable: $reason"
  rm -f "$link"
  printf '%s\n' "$reason" >"$link.UNAVAILABLE"
fi
echo "$link"
