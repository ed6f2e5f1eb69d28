#!/usr/bin/env bash
# summarize.sh < bench-output: the median of each pkg/history benchmark metric over the runs
# of `make bench-history` (-count N), as the Markdown rows of docs/benchmarks.md.
set -euo pipefail
awk '
/^Benchmark/ {
  name = $1
  if (!(name in seen)) { seen[name] = 1; order[++n] = name }
  for (i = 3; i <= NF; i++) {
    unit = $i
    if (unit ~ /^(appends\/s|p50-ms|p99-ms|B\/append@[0-9]+)$/) {
      key = name SUBSEP unit
      vals[key, ++cnt[key]] = $(i - 1)
      if (!((name, unit) in has)) { has[name, unit] = 1; units[name] = units[name] " " unit }
    }
  }
}
function median(key,   k, m, j, t, a) {
  m = cnt[key]
  for (k = 1; k <= m; k++) a[k] = vals[key, k] + 0
  for (k = 2; k <= m; k++) { t = a[k]; for (j = k - 1; j >= 1 && a[j] > t; j--) a[j + 1] = a[j]; a[j + 1] = t }
  return (m % 2) ? a[(m + 1) / 2] : (a[m / 2] + a[m / 2 + 1]) / 2
}
END {
  for (x = 1; x <= n; x++) {
    name = order[x]
    split(substr(units[name], 2), us, " ")
    line = "| " name
    for (u = 1; u in us; u++) line = line sprintf(" | %s %s", median(name SUBSEP us[u]), us[u])
    print line " | " cnt[name SUBSEP us[1]] " runs |"
  }
}'
