# Sourced by the scripts that build images for the local cluster (images.sh, agent-images.sh).

# import_images ROOT HINT: imports each tarball of the array `tarballs` (image `refs[i]`) into
# the local node's containerd; when the cluster is not running, says so and what to do (HINT).
import_images() {
  local root=$1 hint=$2 i
  if "$root/hack/local-cluster" ctr version >/dev/null 2>&1; then
    for i in "${!tarballs[@]}"; do
      "$root/hack/local-cluster" ctr images import "${tarballs[$i]}" >/dev/null
      log "imported ${refs[$i]} into the local node"
    done
  else
    log "local cluster not running: tarballs in $out, not imported ($hint)"
  fi
}
