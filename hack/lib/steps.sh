# Sourced by the scripts that narrate what they do on the local cluster (run-local.sh,
# demo-claude-code.sh): headers, warnings, errors and polling.

step() { printf '\n\033[1m==> %s\033[0m\n' "$*"; }
warn() { printf '\033[33mWARNING: %s\033[0m\n' "$*"; }
fail() {
  printf '\033[31mERROR: %s\033[0m\n' "$*" >&2
  exit 1
}
# wait_until TIMEOUT CMD...: run CMD every 0.2 s until it succeeds; fails after TIMEOUT seconds.
wait_until() {
  local deadline=$((SECONDS + $1))
  shift
  until "$@" >/dev/null 2>&1; do
    ((SECONDS < deadline)) || return 1
    sleep 0.2
  done
}
