#!/usr/bin/env bash
# make check-run-local: `make run-local` from a COLD state must succeed on its first try.
#
# Stops the local cluster if one is running (its state is kept: `make cluster-up` resumes it),
# then runs hack/run-local.sh against a brand-new cluster folder (no PKI, etcd data, images or
# logs), an empty kubectl discovery cache and no .local/ overlay, as a new machine would, and
# fails unless
#   - hack/run-local.sh exits 0 and prints no WARNING or ERROR (no fallback was taken),
#   - its `kubectl get conv,ckpt` output lists every Conversation and Checkpoint of
#     config/samples, and each is up: every Conversation Active, every Checkpoint Ready
#     (hack/lib/samples.sh),
#   - the agent sample told its story: that output shows it with 1 restart and all its
#     messages, its first pod failed with exit code 1 and its second completed, and the second
#     resumed from the first's Crash Checkpoint with the bundle of the complete turns.
# The check's cluster is always brought down at the end. Its folder is deleted when the check
# passes and kept (logs/) when it fails; the next run deletes it first.
#
# Only the cluster binaries and the S3 server may be warm (hack/build-binaries.sh cluster and s3
# run first, outside the timer): the check is about races of a first start, not about cold builds.
#
# Environment: CHECK_RUN_LOCAL_DIR (the check's cluster folder, default
# ~/.cache/parley/check-run-local), CHECK_RUN_LOCAL_TIMEOUT (seconds for run-local, default 600).
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
lc=$root/hack/local-cluster
# shellcheck source=hack/lib/samples.sh
. "$root/hack/lib/samples.sh"
dir=${CHECK_RUN_LOCAL_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/parley/check-run-local}
timeout=${CHECK_RUN_LOCAL_TIMEOUT:-600}

log() { printf '[check-run-local] %s\n' "$*" >&2; }
die() {
  log "FAILED: $*"
  exit 1
}

[ "$(id -u)" = 0 ] || die "must run as root (make run-local starts containerd and a kubelet)"
case $dir in
/ | "$HOME" | "$root" | "") die "refusing CHECK_RUN_LOCAL_DIR=$dir" ;;
esac

log "cluster binaries and S3 server (hack/build-binaries.sh cluster, s3: seconds when cached)"
hack/build-binaries.sh cluster >/dev/null
hack/build-binaries.sh s3 >/dev/null

t0=$SECONDS
# Cold: whatever cluster runs is stopped (one cluster per machine: fixed ports, bridge, iptables),
# a check cluster left by a killed run is stopped and deleted.
log "stopping the local cluster, if any (its state is kept)"
"$lc" down
PARLEY_CLUSTER_DIR=$dir "$lc" purge
rm -rf "$root/.local/run-local-manager" "$root/.local/run-local-samples"

export PARLEY_CLUSTER_DIR=$dir
mkdir -p "$dir"
# kubectl's discovery cache, keyed by host:port, would remember an earlier cluster's API groups.
export KUBECACHEDIR=$dir/kube-cache
out=$dir/run-local.out
passed=0
finish() {
  local rc=$?
  log "bringing the check's cluster down"
  "$lc" down || rc=1
  if [ "$passed" = 1 ] && [ "$rc" = 0 ]; then
    "$lc" purge >/dev/null 2>&1 || log "warning: could not delete $dir"
  else
    log "the check's cluster state and logs are kept in $dir (run-local output: $out)"
  fi
  exit "$rc"
}
trap finish EXIT

log "hack/run-local.sh from a cold state (cluster folder $dir, timeout ${timeout}s)"
rc=0
timeout "$timeout" hack/run-local.sh 2>&1 | tee "$out" || rc=$?
# Without colours, for grep.
sed -i 's/\x1b\[[0-9;]*m//g' "$out"
elapsed=$((SECONDS - t0))
[ "$rc" = 0 ] || die "hack/run-local.sh exited $rc after ${elapsed}s (output: $out)"

problems=()
if grep -E '^(WARNING|ERROR):' "$out" >/dev/null; then
  problems+=("hack/run-local.sh printed warnings: $(grep -E '^(WARNING|ERROR):' "$out" | tr '\n' ' ')")
fi
# The `kubectl get conv,ckpt` section: from its step header to the next one.
rows=$(awk '/^==> kubectl get conv,ckpt$/ {on=1; next} /^==> / {on=0} on' "$out")
KUBECONFIG=$("$lc" kubeconfig)
export KUBECONFIG
expected=$(kubectl get -k config/samples -o name) || problems+=("cannot list the samples' objects")
for obj in $expected; do
  case $obj in
  conversation.* | checkpoint.*)
    grep -q "^$obj " <<<"$rows" || problems+=("$obj is not in the kubectl get conv,ckpt output")
    ;;
  esac
done
not_up=$(samples_not_up "$root") || problems+=("cannot read the phases of the samples")
[ -z "$not_up" ] || problems+=("samples that are not up (a Conversation not Active, a Checkpoint not Ready): $(sed '/^$/d' <<<"$not_up" | paste -sd ';' -)")
grep -q '^conversation\.' <<<"$rows" || problems+=("no Conversation rows in the kubectl get conv,ckpt output")
grep -q '^checkpoint\.' <<<"$rows" || problems+=("no Checkpoint rows in the kubectl get conv,ckpt output")
# The agent sample (config/samples/parley_v1alpha1_conversation_agent.yaml): six turns, exit 1
# in turn 3 of the first pod. Columns are read at the header's positions: empty cells (no
# Context% yet) leave no field for awk to split on.
conv=coding-agent
cell() {
  awk -v row="conversation.parley.dev/$conv" -v col="$1" '
    /^NAME / && !hdr { hdr = $0 }
    $1 == row && hdr {
      start = index(hdr, col); rest = substr(hdr, start + length(col))
      width = match(rest, /[^ ]/) ? length(col) + RSTART - 1 : length($0)
      v = substr($0, start, width); gsub(/ /, "", v); print v; exit
    }' <<<"$rows"
}
[ "$(cell RESTARTS)" = 1 ] || problems+=("the $conv row shows restarts '$(cell RESTARTS)', not 1")
[ "$(cell MESSAGES)" = 12 ] || problems+=("the $conv row shows messages '$(cell MESSAGES)', not 12 (six turns)")
grep -q "^checkpoint.parley.dev/$conv-crash-1 .* Crash .* Ready " <<<"$rows" ||
  problems+=("no Ready Crash Checkpoint $conv-crash-1 in the kubectl get conv,ckpt output")
exit1=$(kubectl get pod "$conv-agent-1" -o jsonpath='{.status.phase} {.status.containerStatuses[0].state.terminated.exitCode}' 2>/dev/null || true)
[ "$exit1" = "Failed 1" ] || problems+=("pod $conv-agent-1 is '${exit1:-missing}', not 'Failed 1'")
phase2=$(kubectl get pod "$conv-agent-2" -o jsonpath='{.status.phase}' 2>/dev/null || true)
[ "$phase2" = Succeeded ] || problems+=("pod $conv-agent-2 is ${phase2:-missing}, not Succeeded")
grep -q "^RESUME resume=true attempt=1 checkpoint=$conv-crash-1 bundleMessages=4 bundleTurns=2 last=a2$" "$out" ||
  problems+=("the output has no log line of $conv-agent-2 resuming from $conv-crash-1 with the 4 messages of turns 1-2")
# kubectl parley read the same conversation through the Session API.
grep -q "^Conversation default/$conv · session .* · 12 messages · 6 turns · " "$out" ||
  problems+=("the output has no kubectl parley history of $conv with its 12 messages in 6 turns")
grep -qE "^Agent: +.* · 1 restart" "$out" ||
  problems+=("the output has no kubectl parley describe of $conv showing its 1 restart")

if [ ${#problems[@]} -gt 0 ]; then
  for p in "${problems[@]}"; do log "problem: $p"; done
  die "hack/run-local.sh exited 0 but did not do its job (output: $out)"
fi
passed=1
log "PASSED: hack/run-local.sh from a cold state in ${elapsed}s; kubectl get conv,ckpt printed:"
printf '%s\n' "$rows" | sed '/^$/d' >&2
