#!/usr/bin/env bash
# hack/build-chart.sh KUSTOMIZE INSTALLER OUT (make chart): writes the Helm chart OUT from
# INSTALLER (dist/install.yaml, the render of config/default) and a render of config/default
# with every optional component (config/prometheus, config/grafana, config/certmanager), made
# here from a copy of config/ in .local/ (git-ignored), so config/ is never edited.
set -euo pipefail
kustomize=$1 installer=$2 out=$3
[[ $kustomize != */* ]] || kustomize=$(cd "$(dirname "$kustomize")" && pwd)/$(basename "$kustomize")
root=$(cd "$(dirname "$0")/.." && pwd)
work=$root/.local/build-chart
rm -rf "$work"
mkdir -p "$work"
cp -r "$root/config" "$work/config"
components=()
for c in prometheus grafana certmanager network-policy; do
  [ -d "$root/config/$c" ] && components+=("../$c")
done
(cd "$work/config/default" && "$kustomize" edit add component "${components[@]}")
"$kustomize" build "$work/config/default" >"$work/extras.yaml"
go run ./tools/gen-chart -base "$installer" -extras "$work/extras.yaml" -out "$out"
