#!/usr/bin/env bash
# fuzz.sh [FUZZTIME]: runs every Go fuzz target in the module for FUZZTIME (default 10s) each.
# Targets are found, not listed, so a new FuzzXxx is fuzzed in CI without touching this script.
set -euo pipefail
fuzztime=${1:-10s}
cd "$(dirname "$0")/.."
status=0
while IFS= read -r line; do
  file=${line%%:*}
  name=$(sed -E 's/^func (Fuzz[A-Za-z0-9_]*).*/\1/' <<<"${line#*:}")
  pkg=./$(dirname "$file")
  echo "=== fuzz $pkg $name ($fuzztime)"
  if ! go test "$pkg" -run '^$' -fuzz "^${name}\$" -fuzztime "$fuzztime"; then status=1; fi
done < <(grep -rE --include='*_test.go' '^func Fuzz[A-Za-z0-9_]*\(' . | grep -v '^./bin/' | sort)
exit $status
