#!/usr/bin/env bash
# mutate.sh [DIR...]: mutation testing with gremlins (make mutate). For each package directory
# (default: the engine, lifecycle, pkg/conversation with compact) gremlins mutates the code the
# package's own tests cover, runs those tests against each mutant, and reports the efficacy:
# killed / (killed + lived). The engine and lifecycle fail below 85 %; docs/testing.md records
# the scores and reviews every survivor. It takes tens of minutes on 2 cores, so it is not in
# CI's default path. Reports: bin/mutate/<dir>.log and .json; each log starts and ends with the
# machine's core count and load average.
set -euo pipefail
cd "$(dirname "$0")/.."
gremlins=${GREMLINS:-bin/gremlins}
out=bin/mutate
mkdir -p "$out"
declare -A bar=([pkg/history/internal/engine]=85 [internal/lifecycle]=85)
dirs=("$@")
[ ${#dirs[@]} -gt 0 ] || dirs=(pkg/history/internal/engine internal/lifecycle pkg/conversation)
# gremlins times each mutant out at its coverage run's duration times the coefficient. A cached
# coverage run made that too short for a mutant, which recompiles the package and its test
# dependents; one that compiled made it far too long per hanging mutant. So the instrumented
# build is warmed first and the coverage run always executes (-count=1): its time is a real
# link and test run, which a mutant's build and test run take a small multiple of.
export GOFLAGS="${GOFLAGS:+$GOFLAGS }-count=1"
coefficient=${MUTATE_TIMEOUT_COEFFICIENT:-10}
machine() { echo "$1 $(date -u +%FT%TZ) nproc $(nproc) load average $(cut -d' ' -f1-3 /proc/loadavg)"; }
status=0
for dir in "${dirs[@]}"; do
  dir=${dir#./}
  name=${dir//\//_}
  args=(unleash --timeout-coefficient "$coefficient" -o "$out/$name.json")
  # Token counting is outside the scope of the bar (and slow to test); compact is in.
  [ "$dir" = pkg/conversation ] && args+=(--exclude-files 'conversation/tokens/')
  [ -n "${bar[$dir]:-}" ] && args+=(--threshold-efficacy "${bar[$dir]}")
  echo "=== mutate ./$dir"
  go test -cover -run '^$' "./$dir/..." >/dev/null
  if ! (
    start=$SECONDS rc=0
    machine start
    "$gremlins" "${args[@]}" "./$dir" 2>&1 || rc=$?
    machine "end ($((SECONDS - start)) s)"
    exit $rc
  ) | tee "$out/$name.log"; then status=1; fi
done
exit $status
