#!/usr/bin/env bash
# agent-frameworks.sh LINK PACKAGE@VERSION...
# Installs the agent frameworks the TypeScript Session API client and its adapters are built
# and tested with (the OpenAI Agents SDK, LangGraph and its checkpoint conformance suite, the
# pinned TypeScript) into a cache outside the clone, once per set of packages, and links LINK
# to that folder (it holds node_modules/). The adapter suite (test/clients)
# compiles the packages under clients/ with it and runs their tests against a live Session API.
#
# When they cannot be installed (no node or npm, no registry), the reason is written to
# LINK.UNAVAILABLE and the script exits 0: the test then skips with that reason, except under
# CI=true, where it fails.
set -euo pipefail
link=$1
shift
# shellcheck source=hack/lib/npm-native.sh
. "$(dirname "$0")/lib/npm-native.sh"
want="$*"
# One folder per set of packages: changing a pin installs beside the old set, never over it.
out=$cache/agent-frameworks-$(printf '%s' "$want" | sha256sum | cut -c1-12)
log() { printf '[agent-frameworks] %s\n' "$*" >&2; }

# install: the packages in $out/node_modules, or a reason on stdout.
install() {
  local tmp
  [ -f "$out/.packages" ] && [ "$(cat "$out/.packages")" = "$want" ] && return 0
  command -v node >/dev/null || { echo "node is not installed"; return 1; }
  command -v npm >/dev/null || { echo "npm is not installed"; return 1; }
  tmp=$(mktemp -d "$cache/.agent-frameworks.XXXXXX")
  log "npm install $want (~150 MB, once)"
  # --ignore-scripts: no downloaded script runs; the native parts vitest needs (rollup,
  # esbuild) come as optional platform packages and are found without one.
  # shellcheck disable=SC2086
  if ! npm install --prefix "$tmp" --no-audit --no-fund --ignore-scripts --loglevel=error $want >"$tmp/npm.log" 2>&1; then
    echo "npm install $want failed: $(tail -n 3 "$tmp/npm.log" | tr '\n' ' ')"
    rm -rf "$tmp"
    return 1
  fi
  local pkg name version got
  for pkg in $want; do
    name=${pkg%@*} version=${pkg##*@}
    got=$(node -p "require('$tmp/node_modules/$name/package.json').version" 2>/dev/null) || true
    if [ "$got" != "$version" ]; then
      echo "the install holds $name version '$got', not $version"
      rm -rf "$tmp"
      return 1
    fi
  done
  printf '%s' "$want" >"$tmp/.packages"
  rm -rf "$out"
  mv "$tmp" "$out"
}

mkdir -p "$cache" "$(dirname "$link")"
exec 9>"$cache/.agent-frameworks.lock"
flock 9
rm -f "$link.UNAVAILABLE"
if reason=$(install); then
  ln -sfn "$out" "$link"
else
  log "agent frameworks unavailable: $reason"
  rm -f "$link"
  printf '%s\n' "$reason" >"$link.UNAVAILABLE"
fi
echo "$link"
