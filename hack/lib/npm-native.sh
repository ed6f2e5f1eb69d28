# Sourced by the scripts that install an npm package with a native binary (claude-code.sh,
# claude-agent-sdk.sh): where they cache it, and which platform package npm must bring.

# cache is outside the clone, so a fresh clone reuses what an earlier one installed.
cache=${PARLEY_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/parley}

# platform prints the suffix of the package that holds this machine's native binary
# (linux-x64, linux-arm64-musl, darwin-arm64, ...), or fails on a platform without one.
platform() {
  local os arch libc=""
  case $(uname -s) in Linux) os=linux ;; Darwin) os=darwin ;; *) return 1 ;; esac
  case $(uname -m) in x86_64 | amd64) arch=x64 ;; aarch64 | arm64) arch=arm64 ;; *) return 1 ;; esac
  if [ "$os" = linux ] && ldd --version 2>&1 | grep -qi musl; then libc=-musl; fi
  echo "$os-$arch$libc"
}
