#!/usr/bin/env bash
# mutate.sh [DIR...]: mutation testing with gremlins (make mutate). For each package directory
# (default: the engine, lifecycle, pkg/conversation with compact) gremlins mutates the code the
# package's own tests cover, runs those tests against each mutant, and reports the efficacy:
# killed / (killed + lived). The engine and lifecycle fail below 85 %; docs/testing.md records
# the scores and reviews every survivor. It takes tens of minutes on 2 cores, so it is not in
# CI's default path. Reports: bin/mutate/<dir>.log and .json.
set -euo pipefail
cd "$(dirname "$0")/.."
gremlins=${GREMLINS:-bin/gremlins}
out=bin/mutate
mkdir -p "$out"
declare -A bar=([pkg/history/internal/engine]=85 [internal/lifecycle]=85)
dirs=("$@")
[ ${#dirs[@]} -gt 0 ] || dirs=(pkg/history/internal/engine internal/lifecycle pkg/conversation)
status=0
for dir in "${dirs[@]}"; do
  dir=${dir#./}
  name=${dir//\//_}
  # A mutant's run recompiles the package and its test dependents, which the coverage run
  # that sets gremlins' timeout did not: a small coefficient times mutants out instead of
  # testing them.
  args=(unleash --timeout-coefficient "${MUTATE_TIMEOUT_COEFFICIENT:-30}" -o "$out/$name.json")
  # Token counting is outside the scope of the bar (and slow to test); compact is in.
  [ "$dir" = pkg/conversation ] && args+=(--exclude-files 'conversation/tokens/')
  [ -n "${bar[$dir]:-}" ] && args+=(--threshold-efficacy "${bar[$dir]}")
  echo "=== mutate ./$dir"
  if ! "$gremlins" "${args[@]}" "./$dir" 2>&1 | tee "$out/$name.log"; then status=1; fi
done
exit $status
